// A host program's steps on the native fast path (FastCall::run_host_program), host loops included, and the
// launches of a call in launches_of_call's order (FastCall::prepare), as _dsl/host/host_program.py and
// host_loop.py run them on the Python call: the program first (a loop run whole gives its carried values), then
// each launch, those in host loops once per trip of them with that trip's values. Every launch is recorded
// before any is made, so a call that leaves anything to Python (a value out of range, too many trips) has
// launched nothing.
#include "fast_call.hpp"

namespace ww::py::fast_call {
namespace {

class Runner {
 public:
  Runner(const FastCall& f, Values& v, CallLaunches* out) : f_(f), v_(v), out_(out) {}

  bool steps(const std::vector<Step>& steps) {
    for (const Step& s : steps) {
      if (s.loop >= 0 ? !f_.loops[s.loop].launches_only && !loop(f_.loops[s.loop], nullptr) : !value(s.value))
        return false;
    }
    return true;
  }

  bool launches(const std::vector<OrderNode>& nodes) {
    for (const OrderNode& n : nodes) {
      if (n.loop >= 0 ? !loop(f_.loops[n.loop], &n.inner) : !record(n.launch)) return false;
    }
    return true;
  }

 private:
  bool value(const Derived& d) {
    bool taken = true;
    for (int g : d.guards) taken = taken && v_.syms[g] != 0;
    v_.syms[d.slot] = 0;
    v_.fvals[d.slot] = 0.0;
    if (taken && !eval_host(d.code, v_, d.is_float, v_.syms[d.slot], v_.fvals[d.slot])) return false;
    return d.expected < 0 || v_.syms[d.slot] == d.expected;
  }

  bool integer(const Expr& e, int64_t& out) {
    double unused;
    return eval_host(e, v_, false, out, unused);
  }

  // One trip's carried values in, its steps, the launches of `inner` (when the launches are made), and the next
  // trip's carried values out into cur.
  bool trip(const LoopPlan& L, int64_t* cur, const std::vector<OrderNode>* inner, bool& first) {
    if (++trips_ > kMaxCallTrips) return false;
    if (first && !steps(L.first)) return false;
    first = false;
    if (!steps(L.body) || (inner && !launches(*inner))) return false;
    int64_t next[kMaxSlots];
    for (size_t c = 0; c < L.carried.size(); ++c)
      if (!integer(L.carried[c].next, next[c])) return false;
    std::copy(next, next + L.carried.size(), cur);
    return true;
  }

  void carry_in(const LoopPlan& L, const int64_t* cur) {
    for (size_t c = 0; c < L.carried.size(); ++c) v_.syms[L.carried[c].in_slot] = cur[c];
  }

  bool loop(const LoopPlan& L, const std::vector<OrderNode>* inner) {
    int64_t cur[kMaxSlots];  // only the carried values' part is used: zeroing the rest would cost every call
    std::fill(cur, cur + L.carried.size(), 0);
    bool taken = true, first = true;
    for (int g : L.guards) taken = taken && v_.syms[g] != 0;
    if (taken) {
      for (size_t c = 0; c < L.carried.size(); ++c)
        if (!integer(L.carried[c].init, cur[c])) return false;
      if (L.is_while) {
        for (;;) {
          carry_in(L, cur);
          int64_t go;
          if (!steps(L.cond) || !integer(L.cond_code, go)) return false;
          if (!go) break;
          if (!trip(L, cur, inner, first)) return false;
        }
      } else {
        int64_t start, stop, step;
        if (!integer(L.bounds[0], start) || !integer(L.bounds[1], stop) || !integer(L.bounds[2], step) ||
            step == 0)  // the Python call names the loop's line
          return false;
        for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
          carry_in(L, cur);
          v_.syms[L.iv_slot] = i;
          if (!trip(L, cur, inner, first)) return false;
          if (__builtin_add_overflow(i, step, &i)) break;  // past the stop, which is an int64_t
        }
      }
    }
    for (size_t c = 0; c < L.carried.size(); ++c) v_.syms[L.carried[c].out_slot] = cur[c];
    return true;
  }

  bool record(int k) {
    const LaunchPlan& l = f_.launches[k];
    for (int s : l.predicates)
      if (v_.syms[s] == 0) return true;  // under a host `if` this call (or trip) does not take
    int64_t g[3];
    for (int d = 0; d < 3; ++d) {
      if (!eval(l.grid[d], v_.syms, g[d]) || g[d] <= 0 || g[d] > UINT32_MAX) return false;  // the Python call
    }
    Recorded* r = out_->add(k, l.size);
    if (!r) return false;
    for (int d = 0; d < 3; ++d) r->grid[d] = static_cast<unsigned>(g[d]);
    r->stream = l.stream_slot < 0 ? l.stream : v_.ptrs[l.stream_slot];
    r->flags = l.flags_of(v_.syms);
    char* b = out_->bytes() + r->offset;
    for (const Param& p : l.params) {
      char* d = b + p.offset;
      if (p.source == Source::Host) {
        std::memcpy(d, v_.hosts[p.slot], f_.hosts[p.slot].size);
        continue;
      }
      bool ok = p.source == Source::Sym     ? pack_int(p.fmt, v_.syms[p.slot], d)
                : p.source == Source::Ptr   ? pack_u64(p.fmt, v_.ptrs[p.slot], d)
                : p.source == Source::Float ? pack_double(p.fmt, v_.fvals[p.slot], d)
                                            : pack_scalar(p.fmt, v_.objs[p.slot], d);
      if (!ok) return false;
    }
    return true;
  }

  const FastCall& f_;
  Values& v_;
  CallLaunches* out_;
  int64_t trips_ = 0;
};

}  // namespace

// The symbol slots a part of the plan reads (r) and writes (w), loop `skip` and what is in it left out.
struct SlotUse {
  const FastCall& f;
  int skip;
  std::vector<char> r = std::vector<char>(kMaxSlots), w = std::vector<char>(kMaxSlots);

  void expr(const Expr& e) {
    for (auto [op, x] : e.code)
      if (op == Op::Sym) r[x] = 1;
  }
  void steps(const std::vector<Step>& steps) {
    for (const Step& s : steps) {
      if (s.loop >= 0) {
        loop(s.loop);
        continue;
      }
      expr(s.value.code);
      for (int g : s.value.guards) r[g] = 1;
      w[s.value.slot] = 1;
    }
  }
  void loop(int j) {
    if (j == skip) return;
    const LoopPlan& L = f.loops[j];
    for (int g : L.guards) r[g] = 1;
    for (const Expr& e : L.bounds) expr(e);
    expr(L.cond_code);
    for (const Carry& c : L.carried) {
      expr(c.init);
      expr(c.next);
      w[c.in_slot] = w[c.out_slot] = 1;
    }
    if (L.iv_slot >= 0) w[L.iv_slot] = 1;
    steps(L.cond);
    steps(L.first);
    steps(L.body);
  }
  void order(const std::vector<OrderNode>& nodes) {
    for (const OrderNode& n : nodes) {
      if (n.loop == skip) continue;
      if (n.loop >= 0) {
        order(n.inner);
        continue;
      }
      const LaunchPlan& l = f.launches[n.launch];
      for (const Expr& e : l.grid) expr(e);
      for (const Param& p : l.params)
        if (p.source == Source::Sym || p.source == Source::Float) r[p.slot] = 1;
      for (int s : l.predicates) r[s] = 1;
      for (int s : l.flag_slots)
        if (s >= 0) r[s] = 1;
    }
  }
};

void FastCall::mark_launch_only_loops() {
  for (size_t j = 0; j < loops.size(); ++j) {
    if (!loops[j].carried.empty()) continue;
    SlotUse inside{*this, -1}, outside{*this, static_cast<int>(j)};
    inside.loop(static_cast<int>(j));
    outside.steps(program);
    outside.order(order);
    bool read = false;
    for (int s = 0; s < kMaxSlots; ++s) read = read || (inside.w[s] && outside.r[s]);
    loops[j].launches_only = !read;
  }
}

bool FastCall::run_host_program(Values& v) const { return Runner(*this, v, nullptr).steps(program); }

bool FastCall::prepare(Values& v, CallLaunches& out) const { return Runner(*this, v, &out).launches(order); }

}  // namespace ww::py::fast_call
