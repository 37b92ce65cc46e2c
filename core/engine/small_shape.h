// SmallShape: a tensor shape held inline up to kInlineDims dimensions (a heap vector beyond),
// the shape of a Request and a Response (message.h). Those are copied several times per tensor
// per step (enqueue, the round's fresh list, the cached response handed to the executor); with
// a std::vector each copy was an allocation and a free, a fifth of the engine's instructions
// per tensor.
//
// Reads like a const std::vector<int64_t> (size, [], at, begin/end, ==) and converts to one
// implicitly (shape_to_string, TensorView::make), so code written against a vector shape
// compiles unchanged. A value type; no thread-safety of its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/base/logging.h"

namespace hora {
namespace engine {

class SmallShape {
 public:
  static constexpr size_t kInlineDims = 6;
  using value_type = int64_t;
  using const_iterator = const int64_t*;
  using iterator = int64_t*;

  SmallShape() = default;
  // Implicit, so a vector or a braced list assigns as it did to a vector shape.
  SmallShape(const std::vector<int64_t>& dims) { assign(dims.data(), dims.size()); }
  SmallShape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  SmallShape& operator=(const std::vector<int64_t>& dims) {
    assign(dims.data(), dims.size());
    return *this;
  }
  SmallShape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.size());
    return *this;
  }

  void assign(const int64_t* dims, size_t count) {
    count_ = count;
    if (count <= kInlineDims) {
      std::copy(dims, dims + count, inline_);
      heap_.clear();
    } else {
      heap_.assign(dims, dims + count);
    }
  }

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  const int64_t* data() const { return count_ <= kInlineDims ? inline_ : heap_.data(); }
  int64_t* data() { return count_ <= kInlineDims ? inline_ : heap_.data(); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + count_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + count_; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& operator[](size_t i) { return data()[i]; }
  // REQUIRES: i < size() (a bug otherwise: callers validate shapes first).
  int64_t at(size_t i) const {
    HORA_CHECK(i < count_);
    return data()[i];
  }

  std::vector<int64_t> to_vector() const { return std::vector<int64_t>(begin(), end()); }
  operator std::vector<int64_t>() const { return to_vector(); }

  friend bool operator==(const SmallShape& a, const SmallShape& b) {
    return a.count_ == b.count_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallShape& a, const SmallShape& b) { return !(a == b); }

 private:
  size_t count_ = 0;
  int64_t inline_[kInlineDims] = {};
  std::vector<int64_t> heap_;  // the dimensions when more than kInlineDims, else empty
};

}  // namespace engine
}  // namespace hora
