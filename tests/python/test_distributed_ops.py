"""utils.distributed (the Hopper backend's multicast-memory and flag operations), CuTe DSL's ordered global copies
(cute.nvgpu.CopyG2ROp / CopyR2GOp with memory_order and memory_scope), and what multi-GPU kernels write around
them: a fragment reloaded in a dynamic loop until it holds what the kernel waits for, a vector stored whole with
cute.arch.store, a register tensor of a thread's strided slice of a tile."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave._dsl.base.errors import DSLError
from warpweave._dsl.base.entry_name import entry_name
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import sass_opcodes, target


def _f32(n):
    return from_dlpack(np.zeros(n, np.float32), assumed_align=16)


def _i32(n):
    return from_dlpack(np.zeros(n, np.int32), assumed_align=16)


def _all_reduce(dtype, num_elements, order="release", scope="sys"):
    @cute.kernel
    def k(inp_mc: cute.Tensor, out_mc: cute.Tensor, flag_mc: cute.Tensor, flag: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        i = tidx * num_elements
        words = utils.distributed.multimem_ld_reduce(inp_mc.iterator + i, dtype=dtype, num_elements=num_elements)
        utils.distributed.multimem_st(out_mc.iterator + i, *words)
        cute.arch.sync_threads()
        if tidx == 0:
            utils.distributed.multimem_red_add1(flag_mc.iterator, order=order, scope=scope)
            utils.distributed.spin_lock_atom_cas_acquire_wait(flag.iterator, expected_val=2, reset_val=0,
                                                              scope=scope)
            utils.distributed.red_add1(flag.iterator + 1, order="release", scope="gpu")
            utils.distributed.spin_lock_ld_lt_relaxed_wait(flag.iterator + 1, expected_val=2, scope="gpu")
            utils.distributed.spin_lock_atom_cas_relaxed_wait(flag.iterator + 2, expected_val=1, reset_val=0)

    @cute.jit
    def h(inp_mc: cute.Tensor, out_mc: cute.Tensor, flag_mc: cute.Tensor, flag: cute.Tensor):
        k(inp_mc, out_mc, flag_mc, flag).launch(grid=[1, 1, 1], block=[32, 1, 1])
    return h


def _args(dtype):
    n = 32 * 8
    if dtype is cutlass.Float32:
        return _f32(n), _f32(n), _i32(4), _i32(4)
    a = from_dlpack(np.zeros(n, np.float16), assumed_align=16)
    b = from_dlpack(np.zeros(n, np.float16), assumed_align=16)
    a.element_type = b.element_type = dtype
    return a, b, _i32(4), _i32(4)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("dtype,n,ld,st", [(cutlass.Float32, 4, "add.v4.f32", "v4.f32"),
                                           (cutlass.BFloat16, 8, "add.acc::f32.v4.bf16x2", "v4.bf16x2"),
                                           (cutlass.Float16, 4, "add.acc::f32.v2.f16x2", "v2.f16x2"),
                                           (cutlass.Float32, 1, "add.f32", "f32")])
def test_multimem_all_reduce_is_one_reducing_load_and_one_store_per_thread(arch, dtype, n, ld, st):
    with target(arch):
        compiled = cute.compile(_all_reduce(dtype, n), *_args(dtype))
    ptx = compiled.info["ptx"]
    assert re.findall(r"multimem\.ld_reduce\.[\w.:]+", ptx) == ["multimem.ld_reduce.relaxed.sys.global." + ld], ptx
    assert re.findall(r"multimem\.st\.[\w.:]+", ptx) == ["multimem.st.relaxed.sys.global." + st], ptx
    assert re.findall(r"multimem\.red\.[\w.:]+", ptx) == ["multimem.red.release.sys.global.add.u32"], ptx
    assert re.search(r"atom\.acquire\.sys\.(global\.)?cas\.b32", ptx), ptx
    assert re.search(r"atom\.relaxed\.gpu\.(global\.)?cas\.b32", ptx), ptx
    assert re.search(r"red\.release\.gpu\.global\.add\.u32", ptx), ptx
    assert re.search(r"ld\.relaxed\.gpu\.(global\.)?b32", ptx), ptx
    ops = sass_opcodes(compiled.cubin)
    # the multicast reduction is its own instruction; the store and the reduction into the multicast flag are the
    # global ones at system scope (the address makes them multicast)
    assert sum(o.startswith("LDGMC.E.") and o.endswith(".STRONG.SYS") for o in ops) == 1, ops
    assert any(o.startswith("STG.E") and o.endswith(".STRONG.SYS") for o in ops), ops
    assert any(o.startswith("REDG.E.ADD") and o.endswith(".STRONG.SYS") for o in ops), ops
    assert any(o.startswith("ATOMG.E.CAS") for o in ops), ops


def test_refusals_name_the_users_line():
    cases = [
        (lambda x, f: utils.distributed.multimem_ld_reduce(f.iterator, dtype=cutlass.Int8, num_elements=4),
         "multimem reduces"),
        (lambda x, f: utils.distributed.multimem_ld_reduce(x.iterator, dtype=cutlass.Float32, num_elements=3),
         "96 bits"),
        (lambda x, f: utils.distributed.multimem_st(x.iterator, cutlass.Int32(1), cutlass.Int32(2),
                                                     cutlass.Int32(3)), "1, 2 or 4 words"),
        (lambda x, f: utils.distributed.multimem_red_add1(f.iterator, scope="device"), "scope"),
        (lambda x, f: utils.distributed.multimem_red_add1(x.iterator), "32-bit integer"),
        (lambda x, f: utils.distributed.spin_lock_atom_cas_acquire_wait(x.iterator, expected_val=1, reset_val=0),
         "32-bit integer"),
    ]

    @cute.kernel
    def k(x: cute.Tensor, f: cute.Tensor, case: cutlass.Constexpr):
        cases[case][0](x, f)

    @cute.jit
    def h(x: cute.Tensor, f: cute.Tensor, case: cutlass.Constexpr):
        k(x, f, case).launch(grid=[1, 1, 1], block=[32, 1, 1])

    for case, (_, msg) in enumerate(cases):
        with target("sm_100a"), pytest.raises(DSLError, match=re.escape(msg)) as e:
            cute.compile(h, _f32(64), _i32(64), case)
        assert "test_distributed_ops.py" in str(e.value)


def _ordered_copy(load_order, load_scope, store_order, store_scope, bits=128, **options):
    @cute.kernel
    def k(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        n = bits // 32
        load = cute.make_copy_atom(cute.nvgpu.CopyG2ROp(), cutlass.Float32, num_bits_per_copy=bits,
                                   memory_order=load_order, memory_scope=load_scope, **options)
        store = cute.make_copy_atom(cute.nvgpu.CopyR2GOp(), cutlass.Float32, num_bits_per_copy=bits,
                                    memory_order=store_order, memory_scope=store_scope)
        s = cute.local_tile(src, (n,), (tidx,))
        d = cute.local_tile(dst, (n,), (tidx,))
        frag = cute.make_rmem_tensor((n,), cutlass.Float32)
        cute.copy(load, s, frag)
        cute.copy(store, frag, d)

    @cute.jit
    def h(src: cute.Tensor, dst: cute.Tensor):
        k(src, dst).launch(grid=[1, 1, 1], block=[32, 1, 1])
    return h


MO, MS = cute.nvgpu.common.MemoryOrder, cute.nvgpu.common.MemoryScope


@pytest.mark.parametrize("load,store,ld,st", [
    ((MO.VOLATILE, MS.SYS), (MO.VOLATILE, MS.SYS), r"ld\.volatile\.global\.v4\.b32", r"st\.volatile\.global\.v4\.b32"),
    ((MO.RELAXED, MS.SYS), (MO.RELEASE, MS.GPU), r"ld\.relaxed\.sys\.global\.v4\.b32",
     r"st\.release\.gpu\.global\.v4\.b32"),
    ((MO.ACQUIRE, None), (None, None), r"ld\.acquire\.gpu\.global\.v4\.b32", r"st\.weak\.global\.v4\.b32"),
])
def test_ordered_global_copies_are_one_access_of_that_form_per_atom(load, store, ld, st):
    with target("sm_100a"):
        compiled = cute.compile(_ordered_copy(*load, *store), _f32(128), _f32(128))
    accesses = re.findall(r"\b(?:ld|st)\.(?!param)[\w.:]+", compiled.info["ptx"])
    assert len(accesses) == 2 and re.fullmatch(ld, accesses[0]) and re.fullmatch(st, accesses[1]), accesses


def test_ordered_copy_refusals():
    cases = [(dict(load_order=MO.RELEASE, load_scope=MS.GPU, store_order=None, store_scope=None), "memory_order"),
             (dict(load_order=MO.VOLATILE, load_scope=MS.GPU, store_order=None, store_scope=None), "no memory_scope"),
             (dict(load_order=None, load_scope=None, store_order=MO.ACQUIRE, store_scope=MS.SYS), "memory_order"),
             (dict(load_order=None, load_scope=None, store_order=None, store_scope=None, bits=16), "32, 64 or 128"),
             (dict(load_order=None, load_scope=None, store_order=None, store_scope=None,
                   l2_prefetch_size="SIZE_64B"), "l2_prefetch_size"),
             (dict(load_order=None, load_scope=None, store_order=None, store_scope=None, evict=1), "'evict'")]
    for kw, msg in cases:
        with target("sm_100a"), pytest.raises(DSLError, match=re.escape(msg)) as e:
            cute.compile(_ordered_copy(**kw), _f32(128), _f32(128))
        assert "test_distributed_ops.py" in str(e.value)


def test_universal_copy_takes_no_options():
    with pytest.raises(DSLError, match="memory_order"):
        cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, memory_order=MO.RELAXED)


def test_a_fragment_reloaded_in_a_dynamic_loop_is_carried():
    """A Lamport-style wait: reload a fragment until none of its words is the sentinel, then use what was read."""
    @cute.kernel
    def k(buf: cute.Tensor, out: cute.Tensor):
        frag = cute.make_rmem_tensor((4,), cutlass.Float32)
        frag.store(buf.load())
        v = frag.load()
        ready = cute.all_(v != -1.0)
        while not ready:
            frag.store(buf.load())
            v = frag.load()
            ready = cute.all_(v != -1.0)
        out.store(v + 1.0)

    @cute.jit
    def h(buf: cute.Tensor, out: cute.Tensor):
        k(buf, out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(h, _f32(4), _f32(4)).info["ptx"]
    # the loop's body reloads; the sum after it reads the carried values (one add per lane after the loop)
    assert len(re.findall(r"\badd\.(?:rn\.)?f32", ptx)) == 4, ptx


def test_store_of_an_ir_vector_is_one_vector_store():
    from warpweave._mlir import ir
    from warpweave._mlir.dialects import vector

    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        vt = ir.VectorType.get([4], cutlass.Int32.mlir_type)
        words = [cutlass.Int32(tidx) + j for j in range(4)]
        cute.arch.store((out.iterator + tidx * 4).llvm_ptr, vector.from_elements(vt, words))

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(h, _i32(128)).info["ptx"]
    assert len(re.findall(r"st\.global\.v4\.(?:b32|u32)", ptx)) == 1, ptx


def test_a_register_tensor_of_a_strided_slice_holds_its_values_only():
    """make_rmem_tensor of a thread's slice of a tile (4 values 512 apart: a cosize of 15876) is the 128 values it
    holds: accepted, and kept in registers."""
    @cute.kernel
    def k(out: cute.Tensor):
        tile = cute.make_layout(((4, 128), 32), stride=((1, 4), 512))
        mine = cute.slice_(tile, ((None, 0), None))
        acc = cute.make_rmem_tensor(mine, cutlass.Float32)
        acc.fill(1.0)
        out[0] = acc.load().reduce(cute.ReductionOp.ADD, 0.0, 0)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_90a"):
        compiled = cute.compile(h, _f32(4))
    assert ".local" not in compiled.info["ptx"]


def test_a_register_tensor_spanning_a_vast_array_is_refused():
    @cute.kernel
    def k(out: cute.Tensor):
        acc = cute.make_rmem_tensor(cute.make_layout(4, stride=100000), cutlass.Float32)   # the register tensor
        acc.fill(1.0)
        out[0] = acc[3]

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_90a"), pytest.raises(DSLError, match=r"spans 300001 Float32 values .* for its 4") as e:
        cute.compile(h, _f32(4))
    assert "test_distributed_ops.py" in str(e.value)


def test_a_jit_methods_name_prefix_is_the_methods():
    """`gemm.__call__.set_name_prefix(name)` (the distributed GEMMs name each compilation so): every object's bound
    method reaches the one decorated function."""
    @cute.kernel
    def gemm_kernel(x: cute.Tensor):
        x[0] = 1.0

    class Gemm:
        @cute.jit
        def __call__(self, x: cute.Tensor):
            gemm_kernel(x).launch(grid=[1, 1, 1], block=[1, 1, 1])

    a, b = Gemm(), Gemm()
    a.__call__.set_name_prefix("rank0_gemm")
    assert b.__call__.jit_function.name_prefix == "rank0_gemm" == Gemm.__call__.name_prefix
    with target("sm_90a"):
        compiled = cute.compile(b, _f32(4))
    # the kernels it launches are named after it (a kernel's own prefix would win)
    assert [launch.kernel for launch in compiled.launches] == [entry_name("rank0_gemm_gemm_kernel")]


def test_atomic_add_returns_the_old_value_of_a_global_or_shared_counter():
    # utils.distributed.atomicAdd (CuTe DSL's): CUDA's atomicAdd, a relaxed atomic of the GPU, on global memory and
    # on a shared-memory histogram; a counter of another width is refused
    @cute.kernel
    def k(counter: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        hist = utils.SmemAllocator().allocate_tensor(cutlass.Int32, cute.make_layout(8))
        old = utils.distributed.atomicAdd(counter.iterator, cutlass.Int32(1))
        out[tidx] = old + utils.distributed.atomicAdd(hist.iterator + tidx % 8, cutlass.Int32(2))

    @cute.jit
    def h(counter: cute.Tensor, out: cute.Tensor):
        k(counter, out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(h, _i32(4), _i32(32)).ptx
    adds = re.findall(r"\batom\.(?:relaxed\.gpu\.)?(global|shared)?\.?add\.[us]32\s+%r\d+", ptx)
    assert sorted(adds) == ["global", "shared"], ptx

    @cute.kernel
    def wide(counter: cute.Tensor):
        utils.distributed.atomicAdd(counter.iterator, 1)

    @cute.jit
    def hw(counter: cute.Tensor):
        wide(counter).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"), pytest.raises(DSLError, match="adds to a 32-bit integer"):
        cute.compile(hw, from_dlpack(np.zeros(4, np.int64), assumed_align=16))
