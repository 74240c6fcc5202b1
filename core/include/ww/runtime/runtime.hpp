// The whole runtime: the CUDA driver API loaded at run time, with checked, RAII-owning wrappers.
#pragma once

#include "ww/runtime/context.hpp"
#include "ww/runtime/device.hpp"
#include "ww/runtime/driver.hpp"
#include "ww/runtime/error.hpp"
#include "ww/runtime/launch.hpp"
#include "ww/runtime/memory.hpp"
#include "ww/runtime/module.hpp"
#include "ww/runtime/stream.hpp"
#include "ww/runtime/tensor_map.hpp"
