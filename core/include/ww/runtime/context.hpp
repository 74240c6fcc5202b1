// Which device the calling thread works on.
//
// The runtime works in whatever CUDA context is current on the calling thread, so kernels share memory and
// streams with PyTorch or CuPy when those made their context current first. Only when no context is current
// does it retain the chosen device's primary context (device 0 unless set_device said otherwise) and make
// it current. Primary contexts are retained once per process and never released: releasing one while
// another library still uses it would pull the rug from under it.
//
// All functions here are thread-safe; the current context is per thread, as in the driver.
#pragma once

namespace ww::runtime {

// Makes device `ordinal`'s primary context current on the calling thread and remembers the choice for
// this thread. Throws CudaError (CUDA_ERROR_INVALID_DEVICE) for an ordinal out of range.
void set_device(int ordinal);

// The device of the context current on this thread, binding one first if there is none.
int current_device();

// Waits for all work in the current context (cuCtxSynchronize); raises errors of earlier async work.
void synchronize();

}  // namespace ww::runtime
