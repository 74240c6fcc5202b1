"""A short printed tour of warpweave's layout algebra (the main job's first part)."""
import warpweave.cute as cute


def layout_demo() -> None:
    def show(label, value):
        print(f"  {label:<58} {value}")

    print("warpweave layout algebra (CuTe notation)")
    a = cute.make_layout((6, 2), stride=(8, 2))
    b = cute.make_layout((4, 3), stride=(3, 1))
    show("A = make_layout((6,2), stride=(8,2))", a)
    show("B = make_layout((4,3), stride=(3,1))", b)
    show("composition(A, B)", cute.composition(a, b))
    show("complement((2,2):(1,6), 24)", cute.complement(cute.parse_layout("(2,2):(1,6)"), 24))
    show("logical_divide((4,2,3):(2,1,8), 4:2)", cute.logical_divide(cute.parse_layout("(4,2,3):(2,1,8)"),
                                                                      cute.parse_layout("4:2")))
    m = cute.make_layout((16, 64), stride=(64, 1))
    show("zipped_divide((16,64):(64,1), (4,8))", cute.zipped_divide(m, (4, 8)))
    show("blocked_product((2,5):(5,1), (3,4):(1,3))", cute.blocked_product(cute.parse_layout("(2,5):(5,1)"),
                                                                           cute.parse_layout("(3,4):(1,3)")))
    tiler, tv = cute.make_layout_tv(cute.make_layout((4, 32), stride=(32, 1)), cute.make_layout((1, 4), stride=(4, 1)))
    show("make_layout_tv((4,32):(32,1), (1,4):(4,1))", f"tiler {tiler}, tv {tv}")
    sw = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    show("swizzled smem tile", sw)
    show("right_inverse((4,8):(8,1))", cute.right_inverse(cute.make_layout((4, 8), stride=(8, 1))))
    try:
        cute.composition(cute.parse_layout("(3,4):(1,10)"), cute.parse_layout("4:2"))
    except ValueError as e:
        show("a violated precondition raises ValueError:", "")
        print(f"    {e}")
