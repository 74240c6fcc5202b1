// warpweave._core.FastCall built from the description native_call.py gives (each argument's from its plan
// class, _dsl/call/arg_kind.py), its Python type, and the test hooks over it. The plan and the call are in
// fast_call.hpp.
#include "fast_call.hpp"

namespace ww::py::fast_call {
namespace {

int fast_call_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  FastCall* f = nb::inst_ptr<FastCall>(self);
  for (auto& o : f->refs) Py_VISIT(o.ptr());
  return 0;
}

int fast_call_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  FastCall* f = nb::inst_ptr<FastCall>(self);
  f->cleared = true;
  for (auto& l : f->launches) l.native = nullptr, l.target = Py_None;
  std::vector<nb::object> refs;
  refs.swap(f->refs);
  return 0;
}

PyType_Slot g_fast_call_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(fast_call_traverse)},
                                   {Py_tp_clear, reinterpret_cast<void*>(fast_call_clear)},
                                   {0, nullptr}};

Op op_of(const std::string& s) {
  static const std::pair<const char*, Op> ops[] = {{"const", Op::Const}, {"sym", Op::Sym}, {"add", Op::Add},
                                                   {"sub", Op::Sub}, {"mul", Op::Mul}, {"floordiv", Op::FloorDiv},
                                                   {"mod", Op::Mod}, {"xor", Op::Xor}, {"min", Op::Min},
                                                   {"max", Op::Max}, {"neg", Op::Neg}, {"lt", Op::Lt},
                                                   {"le", Op::Le}, {"gt", Op::Gt}, {"ge", Op::Ge},
                                                   {"eq", Op::Eq}, {"ne", Op::Ne}, {"and", Op::And},
                                                   {"or", Op::Or}, {"not", Op::Not}, {"abs", Op::Abs},
                                                   {"select", Op::Select}, {"cast", Op::Cast},
                                                   {"arg", Op::Arg}, {"fconst", Op::FConst},
                                                   {"truediv", Op::TrueDiv}, {"shl", Op::Shl}, {"shlw", Op::ShlWrap},
                                                   {"shr", Op::Shr}, {"ctlz", Op::Ctlz},
                                                   {"cttz", Op::Cttz}, {"popc", Op::Popc}};
  for (auto& [n, o] : ops)
    if (s == n) return o;
  throw std::invalid_argument("FastCall: unknown grid operation '" + s + "'");
}

}  // namespace

Expr parse_program(nb::handle program) {
  Expr e;
  int depth = 0;
  for (nb::handle o : nb::cast<nb::list>(program)) {
    nb::tuple ot = nb::cast<nb::tuple>(o);
    Op op = op_of(nb::cast<std::string>(ot[0]));
    int64_t v = nb::cast<int64_t>(ot[1]);
    if (op == Op::Sym && (v < 0 || v >= kMaxSlots)) throw std::invalid_argument("FastCall: a symbol slot");
    bool unary = op == Op::Neg || op == Op::Abs || op == Op::Not || op == Op::Cast || is_bit_count(op);
    bool leaf = op == Op::Const || op == Op::Sym || op == Op::Arg || op == Op::FConst;
    depth += leaf ? 1 : unary ? 0 : op == Op::Select ? -2 : -1;
    if (op == Op::Cast && !((v >= 0 && v <= 511 && (v & 255) <= 64) || v == 512 + 32 || v == 512 + 64))
      throw std::invalid_argument("FastCall: a cast");
    if (op == Op::Arg && (v < 0 || v >= kMaxSlots)) throw std::invalid_argument("FastCall: an argument slot");
    if (is_bit_count(op) && (v < 1 || v > 64)) throw std::invalid_argument("FastCall: a bit count's width");
    if (depth < 1 || depth > kMaxExprStack) throw std::invalid_argument("FastCall: a malformed grid");
    e.code.emplace_back(op, v);
    if (op == Op::Arg || op == Op::FConst || op == Op::TrueDiv || (op == Op::Cast && v >= 512)) e.integer_only = false;
  }
  if (depth != 1) throw std::invalid_argument("FastCall: a malformed grid");
  for (size_t k = 0; k < e.code.size(); ++k) {
    auto [op, v] = e.code[k];
    Op next = k + 1 < e.code.size() ? e.code[k + 1].first : Op::Const;
    bool binary = next != Op::Select && next != Op::Cast && next != Op::Neg && next != Op::Abs && next != Op::Not &&
                  next != Op::Const && next != Op::Sym && next != Op::Arg && next != Op::FConst &&
                  next != Op::TrueDiv && !is_bit_count(next);
    if ((op == Op::Const || op == Op::Sym) && binary && k + 1 < e.code.size()) {
      e.ins.push_back(Ins{next, static_cast<uint8_t>(op == Op::Const ? 1 : 2), v});
      ++k;
    } else {
      e.ins.push_back(Ins{op, 0, v});
    }
  }
  return e;
}

namespace {

int checked_slot(nb::handle h) {
  int s = nb::cast<int>(h);
  if (s < 0 || s >= kMaxSlots) throw std::invalid_argument("FastCall: a value slot out of range");
  return s;
}

Derived parse_value(nb::tuple t) {
  Derived d{checked_slot(t[0]), parse_program(t[1]), {}, false, -1};
  if (nb::len(t) > 2)
    for (nb::handle g : nb::cast<nb::list>(t[2])) d.guards.push_back(checked_slot(g));
  if (nb::len(t) > 3) d.is_float = nb::cast<bool>(t[3]);
  if (nb::len(t) > 4) d.expected = nb::cast<int64_t>(t[4]);
  return d;
}

// Host program steps: values (slot, program, guard slots, is_float[, expected]) or ("loop", index) of a loop
// below `nloops` (a loop's steps name only loops before it, so none runs inside itself).
std::vector<Step> parse_steps(nb::handle items, int nloops) {
  std::vector<Step> out;
  for (nb::handle h : nb::cast<nb::list>(items)) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    Step s;
    if (nb::isinstance<nb::str>(t[0])) {
      s.loop = nb::cast<int>(t[1]);
      if (nb::cast<std::string>(t[0]) != "loop" || s.loop < 0 || s.loop >= nloops)
        throw std::invalid_argument("FastCall: a host loop step");
    } else {
      s.value = parse_value(t);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// (guard slots, is_while, [start, stop, step] programs, cond steps, cond program, loop variable slot,
// [(in slot, out slot, init program, next program)], body steps[, the steps of the first trip only]): loop
// `index` of the plan.
LoopPlan parse_loop(nb::handle h, int index) {
  nb::tuple t = nb::cast<nb::tuple>(h);
  if (nb::len(t) != 8 && nb::len(t) != 9) throw std::invalid_argument("FastCall: a host loop has 8 or 9 fields");
  LoopPlan L;
  for (nb::handle g : nb::cast<nb::list>(t[0])) L.guards.push_back(checked_slot(g));
  L.is_while = nb::cast<bool>(t[1]);
  if (L.is_while) {
    L.cond = parse_steps(t[3], index);
    L.cond_code = parse_program(t[4]);
  } else {
    nb::list bounds = nb::cast<nb::list>(t[2]);
    if (nb::len(bounds) != 3) throw std::invalid_argument("FastCall: a host loop's bounds");
    for (int d = 0; d < 3; ++d) L.bounds[d] = parse_program(bounds[d]);
    L.iv_slot = checked_slot(t[5]);
  }
  for (nb::handle c : nb::cast<nb::list>(t[6])) {
    nb::tuple ct = nb::cast<nb::tuple>(c);
    L.carried.push_back(Carry{checked_slot(ct[0]), checked_slot(ct[1]), parse_program(ct[2]), parse_program(ct[3])});
  }
  L.body = parse_steps(t[7], index);
  if (nb::len(t) > 8) L.first = parse_steps(t[8], index);
  return L;
}

// The order of the launches: a launch index, or ("loop", loop index, [inner order]).
std::vector<OrderNode> parse_order(nb::handle items, int nlaunches, int nloops) {
  std::vector<OrderNode> out;
  for (nb::handle h : nb::cast<nb::list>(items)) {
    OrderNode n;
    if (nb::isinstance<nb::int_>(h)) {
      n.launch = nb::cast<int>(h);
      if (n.launch < 0 || n.launch >= nlaunches) throw std::invalid_argument("FastCall: a launch index");
    } else {
      nb::tuple t = nb::cast<nb::tuple>(h);
      n.loop = nb::cast<int>(t[1]);
      if (n.loop < 0 || n.loop >= nloops) throw std::invalid_argument("FastCall: a host loop index");
      n.inner = parse_order(t[2], nlaunches, nloops);
    }
    out.push_back(std::move(n));
  }
  return out;
}

// A launch's options: ((cooperative, slot or -1), (pdl, slot or -1)[, preferred cluster: () or (x, y, z),
// events: (completion slot or -1, its flags, programmatic slot or -1, its flags, trigger at block start)]), the
// event slots those of Event arguments.
void parse_launch_options(nb::tuple ft, const std::vector<ArgPlan>& args, LaunchPlan& l) {
  if (nb::len(ft) != 2 && nb::len(ft) != 4)
    throw std::invalid_argument("FastCall: a launch's options are (cooperative, pdl[, preferred cluster, events])");
  for (int k = 0; k < 2; ++k) {
    nb::tuple fk = nb::cast<nb::tuple>(ft[k]);
    l.flags[k] = nb::cast<bool>(fk[0]);
    l.flag_slots[k] = nb::cast<int>(fk[1]) < 0 ? -1 : checked_slot(fk[1]);
  }
  l.has_flags = true;
  if (nb::len(ft) == 2) return;
  l.has_extras = true;
  std::vector<unsigned> pc = nb::cast<std::vector<unsigned>>(ft[2]);
  if (!pc.empty() && (pc.size() != 3 || !pc[0] || !pc[1] || !pc[2]))
    throw std::invalid_argument("FastCall: a preferred cluster has 3 positive extents");
  if (!pc.empty()) l.extras.preferred_cluster = rt::Dim3(pc[0], pc[1], pc[2]);
  nb::tuple ev = nb::cast<nb::tuple>(ft[3]);
  if (nb::len(ev) != 5) throw std::invalid_argument("FastCall: a launch's events are 5 values");
  for (int k = 0; k < 2; ++k) {
    int s = nb::cast<int>(ev[2 * k]);
    if (s >= 0) {
      s = checked_slot(ev[2 * k]);
      bool is_event = false;
      for (const ArgPlan& a : args) is_event = is_event || (a.kind == ArgKind::Event && a.slot == s);
      if (!is_event) throw std::invalid_argument("FastCall: an event slot is not an event argument's");
    }
    l.event_slots[k] = s;
  }
  l.extras.completion_flags = nb::cast<int>(ev[1]);
  l.extras.programmatic_flags = nb::cast<int>(ev[3]);
  l.extras.trigger_at_block_start = nb::cast<bool>(ev[4]);
}

// One argument's plan from its description (build_fast_call's `args`), or of an element of a Tree at `depth`.
ArgPlan parse_arg(FastCall* f, nb::tuple t, int depth) {
  int code = nb::cast<int>(t[0]);
  if (code < 0 || code > static_cast<int>(ArgKind::Tree))
    throw std::invalid_argument("FastCall: unknown argument kind " + std::to_string(code));
  ArgPlan p;
  p.kind = static_cast<ArgKind>(code);
  switch (p.kind) {
    case ArgKind::Skip: break;
    case ArgKind::Tensor:
      p.object = f->keep(t[1]);
      p.slot = checked_slot(t[2]);
      p.rank = nb::cast<int>(t[3]);
      if (p.rank < 0 || p.rank > kMaxRank) throw std::invalid_argument("FastCall: tensor rank out of range");
      p.torch = nb::cast<bool>(t[4]);
      p.keys.width = 2 + p.rank;
      for (nb::handle r : nb::cast<nb::list>(t[5])) {
        nb::tuple rr = nb::cast<nb::tuple>(r);
        SymRead s{nb::cast<bool>(rr[1]), nb::cast<int>(rr[2]), checked_slot(rr[0])};
        if (s.mode < 0 || s.mode >= p.rank) throw std::invalid_argument("FastCall: a mode out of range");
        p.reads.push_back(s);
      }
      break;
    case ArgKind::Int:
      p.slot = checked_slot(t[1]);
      p.bits = nb::cast<int>(t[2]);
      if (p.bits != 32 && p.bits != 64) throw std::invalid_argument("FastCall: an integer of 32 or 64 bits");
      break;
    case ArgKind::Scalar:
    case ArgKind::Stream:
    case ArgKind::Event:
      p.slot = checked_slot(t[1]);
      break;
    case ArgKind::Pointer:
      p.slot = checked_slot(t[1]);
      if (!PyType_Check(t[2].ptr())) throw std::invalid_argument("FastCall: a pointer's type must be a class");
      p.object = f->keep(t[2]);
      p.element_type = f->keep(t[3]);
      p.mem_space = f->keep(t[4]);
      p.align = nb::cast<int64_t>(t[5]);
      break;
    case ArgKind::Const:
      p.object = nb::cast<bool>(t[1]) ? f->keep(t[2]) : nullptr;
      break;
    case ArgKind::Tree:
      if (depth >= kMaxTreeDepth) throw std::invalid_argument("FastCall: a list or tuple nested too deep");
      for (nb::handle c : nb::cast<nb::list>(t[1])) {
        ArgPlan e = parse_arg(f, nb::cast<nb::tuple>(c), depth + 1);
        if (e.kind != ArgKind::Int && e.kind != ArgKind::Scalar && e.kind != ArgKind::Const && e.kind != ArgKind::Tree)
          throw std::invalid_argument("FastCall: an element of a list or tuple is a number, a value or a tuple");
        p.children.push_back(std::move(e));
      }
      break;
  }
  return p;
}

// args: per argument a tuple led by its ArgKind (the NATIVE_ codes of _dsl/call/arg_kind.py): (Skip,) |
// (Tensor, spec, ptr_slot, rank, torch, [(slot, is_stride, mode)]) | (Int, slot, bits) | (Scalar, slot) |
// (Stream, slot) | (Const, has_value, value) | (Pointer, slot, RuntimePointer, element_type, mem_space, align) |
// (Event, slot) | (Tree, [its elements' descriptions: Int, Scalar, Const or Tree]).
// launches: per launch (target, kernel, [grid programs x3 of (op, operand)], stream_slot, stream, size,
// [(source, fmt, slot, offset)], [predicate slots], None or its options (parse_launch_options: cooperative and
// pdl fixed where the slot is -1, else the Boolean there at each call; a preferred cluster; events)).
// derived: the host program's steps in order (parse_steps), loops: its host loops (parse_loop), order: the
// launches' order (parse_order; None: one after another). hosts: per host argument (produce, argument index,
// its address slot, [key symbol slots], number of them handed to produce (the last ones), size); a launch's
// parameter ("host", "", index, offset) is its bytes.
void build_fast_call(FastCall* f, nb::tuple bound_self, int nargs, nb::list defaults, nb::list constexprs,
                     nb::list args, nb::list launches, nb::handle view_type, nb::handle satisfies,
                     nb::handle numeric, nb::list derived, nb::list loops, nb::handle order, nb::list hosts) {
  if (nargs < 0 || nargs > kMaxArgs) throw std::invalid_argument("FastCall: too many arguments");
  if (nb::len(args) != static_cast<size_t>(nargs) || nb::len(constexprs) != static_cast<size_t>(nargs))
    throw std::invalid_argument("FastCall: one plan and one Constexpr entry per argument");
  if (nb::len(bound_self) > static_cast<size_t>(nargs) || nb::len(defaults) > static_cast<size_t>(nargs))
    throw std::invalid_argument("FastCall: more bound or default values than arguments");
  f->nargs = nargs;
  f->view_type = f->keep(view_type);
  f->satisfies = f->keep(satisfies);
  if (!numeric.is_none()) {
    if (!PyType_Check(numeric.ptr())) throw std::invalid_argument("FastCall: numeric must be a class");
    f->numeric = f->keep(numeric);
  }
  for (nb::handle h : bound_self) f->bound_self.push_back(f->keep(h));
  for (nb::handle h : defaults) f->defaults.push_back(f->keep(h));
  for (nb::handle h : constexprs) {
    bool has = !h.is_none();
    f->constexprs.push_back(has ? f->keep(nb::cast<nb::tuple>(h)[0]) : nullptr);
    f->nconstexprs += has;
  }
  for (nb::handle h : args) f->args.push_back(parse_arg(f, nb::cast<nb::tuple>(h), 0));
  if (nb::len(hosts) > static_cast<size_t>(kMaxHosts)) throw std::invalid_argument("FastCall: too many host arguments");
  for (nb::handle h : hosts) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    HostArg ha;
    ha.produce = f->keep(t[0]);
    ha.arg = nb::cast<int>(t[1]);
    if (ha.arg < 0 || ha.arg >= nargs) throw std::invalid_argument("FastCall: a host argument's argument");
    ha.ptr_slot = checked_slot(t[2]);
    for (nb::handle s : nb::cast<nb::list>(t[3])) ha.key_slots.push_back(checked_slot(s));
    if (ha.key_slots.size() > kMaxHostKey)
      throw std::invalid_argument("FastCall: a host argument's key");
    ha.nproduce = nb::cast<int>(t[4]);
    if (ha.nproduce < 0 || ha.nproduce > static_cast<int>(ha.key_slots.size()))
      throw std::invalid_argument("FastCall: a host argument's produced symbols");
    ha.size = nb::cast<uint32_t>(t[5]);
    if (ha.size == 0 || ha.size > 4096) throw std::invalid_argument("FastCall: a host argument's size");
    f->hosts.push_back(std::move(ha));
  }
  if (nb::len(launches) > 8) throw std::invalid_argument("FastCall: more than 8 launches");
  nb::handle launcher_type = nb::type<Launcher>();
  for (nb::handle h : launches) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    LaunchPlan l;
    l.target = f->keep(t[0]);
    if (launcher_type.is_valid() && nb::isinstance<Launcher>(t[0])) l.native = nb::inst_ptr<Launcher>(t[0]);
    l.kernel = nb::cast<std::string>(t[1]);
    nb::list grid = nb::cast<nb::list>(t[2]);
    if (nb::len(grid) != 3) throw std::invalid_argument("FastCall: a grid has 3 extents");
    for (int d = 0; d < 3; ++d) l.grid[d] = parse_program(grid[d]);
    l.stream_slot = nb::cast<int>(t[3]);
    if (l.stream_slot >= kMaxSlots) throw std::invalid_argument("FastCall: a stream slot out of range");
    l.stream = nb::cast<uint64_t>(t[4]);
    l.size = nb::cast<uint32_t>(t[5]);
    if (l.native && l.native->offsets.size() != nb::len(nb::cast<nb::list>(t[6])))
      throw std::invalid_argument("FastCall: the launcher's parameters differ from the plan's");
    for (nb::handle ph : nb::cast<nb::list>(t[6])) {
      nb::tuple pt = nb::cast<nb::tuple>(ph);
      std::string src = nb::cast<std::string>(pt[0]), fmt = nb::cast<std::string>(pt[1]);
      Source source = src == "sym" ? Source::Sym : src == "ptr" ? Source::Ptr : src == "float" ? Source::Float
                      : src == "host" ? Source::Host : Source::Scalar;
      Param p{source, fmt.size() == 1 ? fmt[0] : '\0', checked_slot(pt[2]), nb::cast<uint32_t>(pt[3])};
      if (source == Source::Host) {
        if (p.slot >= static_cast<int>(f->hosts.size()) || p.offset + f->hosts[p.slot].size > l.size)
          throw std::invalid_argument("FastCall: a host argument parameter's index or offset");
        l.params.push_back(p);
        continue;
      }
      if (src != "sym" && src != "ptr" && src != "scalar" && src != "float")
        throw std::invalid_argument("FastCall: parameter source");
      if (source == Source::Float && p.fmt != 'e' && p.fmt != 'f' && p.fmt != 'd')
        throw std::invalid_argument("FastCall: a float parameter's format");
      if (!fmt_size(p.fmt) || p.offset + fmt_size(p.fmt) > l.size)
        throw std::invalid_argument("FastCall: a parameter's format or offset");
      l.params.push_back(p);
    }
    if (nb::len(t) > 7)
      for (nb::handle ph : nb::cast<nb::list>(t[7])) l.predicates.push_back(checked_slot(ph));
    if (nb::len(t) > 8 && !t[8].is_none()) parse_launch_options(nb::cast<nb::tuple>(t[8]), f->args, l);
    f->launches.push_back(std::move(l));
  }
  int nloops = static_cast<int>(nb::len(loops));
  for (int j = 0; j < nloops; ++j) f->loops.push_back(parse_loop(loops[j], j));
  f->program = parse_steps(derived, nloops);
  if (order.is_none()) {
    for (size_t k = 0; k < f->launches.size(); ++k) f->order.push_back(OrderNode{static_cast<int>(k), -1, {}});
  } else {
    f->order = parse_order(order, static_cast<int>(f->launches.size()), nloops);
  }
  f->mark_launch_only_loops();
}

void init_fast_call(FastCall* self, nb::tuple bound_self, int nargs, nb::list defaults, nb::list constexprs,
                    nb::list args, nb::list launches, nb::handle view_type, nb::handle satisfies,
                    nb::handle numeric, nb::list derived, nb::list loops, nb::handle order, nb::list hosts) {
  FastCall f;
  build_fast_call(&f, bound_self, nargs, defaults, constexprs, args, launches, view_type, satisfies, numeric,
                  derived, loops, order, hosts);
  new (self) FastCall(std::move(f));
}


}  // namespace
}  // namespace ww::py::fast_call

using namespace ww::py::fast_call;

void bind_fast_call(nb::module_& m) {
  g_names = {intern("element_type"), intern("mem_space"), intern("assumed_align"), intern("address"), intern("_spec"), intern("spec"), intern("_v"), intern("data_ptr"), intern("_shape"), intern("_strides"),
             intern("dtype"), intern("stride"), intern("shape"), intern("cuda_stream"), intern("__name__"),
             intern("__module__")};
  if (nb::hasattr(m, "CudaError")) g_cuda_error = nb::getattr(m, "CudaError").inc_ref().ptr();
  g_cuda_stream_name = g_names.cuda_stream;
  g_ptr_name = intern("ptr");
  g_handle_name = intern("handle");
  g_cuda_event_name = intern("cuda_event");
  g_view_watcher = PyDict_AddWatcher(view_dict_changed);  // -1 (no cache) when the interpreter has none left
  if (g_view_watcher < 0) PyErr_Clear();

  nb::class_<FastCall> fc(m, "FastCall", nb::type_slots(g_fast_call_slots),
                          "The native fast path of one compiled function's calls (built by _dsl/call/native_call.py).");
  fc.def("__init__", &init_fast_call, nb::arg("bound_self"), nb::arg("nargs"), nb::arg("defaults"),
         nb::arg("constexprs"), nb::arg("args"), nb::arg("launches"), nb::arg("view_type"), nb::arg("satisfies"),
         nb::arg("numeric") = nb::none(), nb::arg("derived") = nb::list(),
         nb::arg("loops") = nb::list(), nb::arg("order") = nb::none(), nb::arg("hosts") = nb::list())
      // The launches a call would make, [(grid, stream, parameter bytes)], without making them; None where the
      // call would go the Python way.
      .def("packed", [](FastCall& f, nb::args args) -> nb::object {
        std::vector<PyObject*> given;
        for (nb::handle h : args) given.push_back(h.ptr());
        Values v;
        if (f.read(given.data(), static_cast<Py_ssize_t>(given.size()), v) == Outcome::Fallback) return nb::none();
        CallLaunches made;
        if (!f.run_host_program(v) || !f.prepare(v, made)) return nb::none();
        nb::list out;
        for (int k = 0; k < made.n; ++k) {  // the launches made, those of host loops once per trip
          const Recorded& r = made.at(k);
          out.append(nb::make_tuple(nb::make_tuple(r.grid[0], r.grid[1], r.grid[2]), r.stream,
                                    nb::bytes(made.bytes() + r.offset, f.launches[r.launch].size)));
        }
        return out;
      })
      .def_prop_ro("stats", [](const FastCall& f) { return nb::make_tuple(f.native_calls, f.fallbacks); },
                   "(calls taken natively, calls left to the Python call)");
  g_fast_call_type = reinterpret_cast<PyTypeObject*>(fc.ptr());

  // For tests: a grid program evaluated as a call evaluates it (None where the call would go the Python way:
  // a division by zero, or a value leaving 64 bits), and the torch tensor types seen with how they are read.
  m.def("fast_call_eval", [](nb::handle program, const std::vector<int64_t>& syms) -> nb::object {
    Expr e = parse_program(program);
    int64_t all[kMaxSlots] = {};
    for (size_t i = 0; i < syms.size() && i < static_cast<size_t>(kMaxSlots); ++i) all[i] = syms[i];
    int64_t r;
    if (!eval(e, all, r)) return nb::none();
    return nb::int_(r);
  });
  // For tests: one value of a host program as the native path computes it (syms: symbol slots, args: the numbers
  // of scalar argument slots); None where the call would go the Python way.
  m.def("fast_call_eval_host", [](nb::handle program, const std::vector<int64_t>& syms, nb::list args,
                                  bool want_float) -> nb::object {
    Expr e = parse_program(program);
    auto v = std::make_unique<Values>();
    for (size_t i = 0; i < static_cast<size_t>(kMaxSlots); ++i) v->syms[i] = i < syms.size() ? syms[i] : 0;
    if (nb::len(args) > static_cast<size_t>(kMaxSlots)) throw std::invalid_argument("too many arguments");
    for (size_t i = 0; i < nb::len(args); ++i) v->objs[i] = args[i].ptr();
    int64_t r = 0;
    double d = 0.0;
    if (!eval_host(e, *v, want_float, r, d)) return nb::none();
    return want_float ? nb::object(nb::float_(d)) : nb::object(nb::int_(r));
  });
  m.def("fast_call_torch_types", []() {
    nb::list out;
    for (int i = 0; i < g_ntorch_types; ++i) {
      const TorchType& t = g_torch_types[i];
      out.append(nb::make_tuple(nb::handle(t.type), t.api != nullptr && t.trusted));
    }
    return out;
  }, "[(type, read through its DLPack exchange table)] of the torch tensor types compiled calls have seen");

  bind_compiled_function_base(m);
}

