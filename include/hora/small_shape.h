// SmallShape: a tensor shape held inline up to kInlineDims dimensions (a heap vector beyond),
// the shape of a TensorView (tensor_view.h) and of the engine's Request and Response
// (core/engine/message.h). Those are copied several times per tensor per step (the views into
// the queue's entry, the request into the round's fresh list, the cached response handed to
// the executor); with a std::vector each copy was an allocation and a free.
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

#include "hora/logging.h"

namespace hora {

class SmallShape {
 public:
  static constexpr size_t kInlineDims = 6;
  using value_type = int64_t;
  using const_iterator = const int64_t*;
  using iterator = int64_t*;

  SmallShape() = default;
  // Copies and moves touch the heap vector only for a shape beyond kInlineDims (the defaults
  // would call the vector's own copy or move every time: a call per copy of a view).
  SmallShape(const SmallShape& other) { assign(other.data(), other.count_); }
  SmallShape(SmallShape&& other) noexcept { take(other); }
  SmallShape& operator=(const SmallShape& other) {
    if (this != &other) assign(other.data(), other.count_);
    return *this;
  }
  SmallShape& operator=(SmallShape&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }
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
    if (count <= kInlineDims) {
      std::copy(dims, dims + count, inline_);
      if (count_ > kInlineDims) heap_.clear();
    } else {
      heap_.assign(dims, dims + count);
    }
    count_ = count;
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
  // A move: an inline shape is copied (`other` keeps it), a heap one taken (`other` is left
  // empty).
  void take(SmallShape& other) {
    if (other.count_ <= kInlineDims) {
      assign(other.inline_, other.count_);
    } else {
      heap_ = std::move(other.heap_);
      count_ = other.count_;
      other.heap_.clear();
      other.count_ = 0;
    }
  }

  size_t count_ = 0;
  int64_t inline_[kInlineDims] = {};
  std::vector<int64_t> heap_;  // the dimensions when more than kInlineDims, else empty
};

}  // namespace hora
