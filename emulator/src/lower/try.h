// Internal to the lowerings: early return of a failed Status or StatusOr.
//   TRY(p.Append(q, in));              // returns the Status when not ok
//   TRY_ASSIGN(BufferId b, p.AllocHbm("x", n));
#ifndef TRNMX_EMULATOR_SRC_LOWER_TRY_H_
#define TRNMX_EMULATOR_SRC_LOWER_TRY_H_

#define TRY(expr)                                \
  do {                                           \
    if (Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)
#define TRY_ASSIGN(lhs, expr)         \
  do {                                \
    auto r_ = (expr);                 \
    if (!r_.ok()) return r_.status(); \
    lhs = *r_;                        \
  } while (0)

#endif  // TRNMX_EMULATOR_SRC_LOWER_TRY_H_
