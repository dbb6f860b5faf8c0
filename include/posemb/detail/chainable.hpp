// Chainable setters for a table row or an options value: Derived's with_x(v) is
// `return with(&Derived::x, v);`, a copy with one member changed, so a row names only what
// differs from the defaults: ModelFamily("mistral", "...").with_window(WindowRule::EveryLayer).
#pragma once

#include <utility>

namespace posemb::detail {

template <class Derived>
struct Chainable {
 protected:
  // A copy of *this with `member` set to value.
  template <class T, class Value>
  Derived with(T Derived::*member, Value&& value) const {
    Derived copy = static_cast<const Derived&>(*this);
    copy.*member = std::forward<Value>(value);
    return copy;
  }
};

}  // namespace posemb::detail
