#include "ops/copy_strided.h"

#include <algorithm>

#include "common/parallel.h"

namespace mpa {

namespace {

struct Dim {
  int64_t size, dst, src;  // extent, dst stride, src stride (elements)
};

// Drops size-1 dims and merges neighbours that are jointly contiguous, so the copy loops see the fewest
// and longest dims. Returns false when the box is empty.
bool simplify(const Shape& shape, const std::vector<int64_t>& ds, const std::vector<int64_t>& ss, std::vector<Dim>& dims) {
  dims.clear();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return false;
    if (shape[d] == 1) continue;
    const Dim cur{shape[d], ds[d], ss[d]};
    if (!dims.empty() && dims.back().dst == cur.dst * cur.size && dims.back().src == cur.src * cur.size) {
      dims.back() = Dim{dims.back().size * cur.size, cur.dst, cur.src};
    } else {
      dims.push_back(cur);
    }
  }
  return true;
}

constexpr int64_t kTile = 32;

// Unsigned stand-ins for elements of each size, declared may_alias: the storage holds floats, ints or
// bools, and these loads and stores must not be reordered against typed accesses elsewhere.
template <size_t N> struct AliasingElementOf;
template <> struct AliasingElementOf<1> { typedef uint8_t __attribute__((may_alias)) type; };
template <> struct AliasingElementOf<2> { typedef uint16_t __attribute__((may_alias)) type; };
template <> struct AliasingElementOf<4> { typedef uint32_t __attribute__((may_alias)) type; };
template <> struct AliasingElementOf<8> { typedef uint64_t __attribute__((may_alias)) type; };
template <size_t N> using AliasingElement = typename AliasingElementOf<N>::type;

// Runs row_body(dst, src, block) for every index of the outer dims and every block in [0, blocks), in
// parallel; block_elems (the work of one call) sizes the grain.
template <class RowBody>
void for_each_row(std::byte* dst, const std::byte* src, size_t elem, const std::vector<Dim>& outer, int64_t block_elems,
                  int64_t blocks, RowBody&& row_body) {
  int64_t rows = 1;
  for (const Dim& d : outer) rows *= d.size;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(block_elems, 1));
  const int64_t e = static_cast<int64_t>(elem);
  parallel_for(rows * blocks, grain, [&](int64_t unit_begin, int64_t unit_end) {
    const int64_t begin = unit_begin / blocks, end = (unit_end + blocks - 1) / blocks;
    const size_t n = outer.size();
    std::vector<int64_t> idx(n);
    int64_t doff = 0, soff = 0, rest = begin;
    for (size_t d = n; d-- > 0;) {
      idx[d] = rest % outer[d].size;
      rest /= outer[d].size;
      doff += idx[d] * outer[d].dst;
      soff += idx[d] * outer[d].src;
    }
    for (int64_t r = begin; r < end; ++r) {
      const int64_t first = std::max(unit_begin - r * blocks, int64_t{0});
      const int64_t last = std::min(unit_end - r * blocks, blocks);
      for (int64_t b = first; b < last; ++b) row_body(dst + doff * e, src + soff * e, b);
      for (size_t d = n; d-- > 0;) {  // odometer increment
        doff += outer[d].dst;
        soff += outer[d].src;
        if (++idx[d] < outer[d].size) break;
        doff -= outer[d].dst * outer[d].size;
        soff -= outer[d].src * outer[d].size;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

void copy_strided(void* dst_ptr, const std::vector<int64_t>& dst_strides, const void* src_ptr,
                  const std::vector<int64_t>& src_strides, const Shape& shape, size_t elem) {
  std::vector<Dim> dims;
  if (!simplify(shape, dst_strides, src_strides, dims)) return;
  auto* dst = static_cast<std::byte*>(dst_ptr);
  const auto* src = static_cast<const std::byte*>(src_ptr);
  if (dims.empty()) {
    std::memcpy(dst, src, elem);
    return;
  }
  const Dim last = dims.back();
  const int64_t e = static_cast<int64_t>(elem);
  if (last.dst == 1 && last.src == 1) {  // contiguous inner runs
    dims.pop_back();
    const size_t run_bytes = static_cast<size_t>(last.size * e);
    for_each_row(dst, src, elem, dims, last.size, 1,
                 [&](std::byte* d, const std::byte* s, int64_t) { std::memcpy(d, s, run_bytes); });
    return;
  }
  // A transposed inner pair: dst is contiguous along the last dim, src along another one. Copy in tiles
  // so both sides stay in cache.
  if (last.dst == 1 && dims.size() >= 2 && last.size >= 8) {
    for (size_t k = dims.size() - 1; k-- > 0;) {
      if (dims[k].src != 1 || dims[k].size < 8) continue;
      const Dim a = dims[k];
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k));
      dims.pop_back();
      visit_elem_bytes(elem, [&](auto tag) {
        using U = AliasingElement<sizeof(typename decltype(tag)::type)>;
        // One block = a band of kTile source-contiguous indices across the whole destination row.
        const int64_t bands = (a.size + kTile - 1) / kTile;
        for_each_row(dst, src, elem, dims, kTile * last.size, bands, [&](std::byte* d_row, const std::byte* s_row, int64_t band) {
          U* d = reinterpret_cast<U*>(d_row);
          const U* s = reinterpret_cast<const U*>(s_row);
          const int64_t i0 = band * kTile;
          for (int64_t j0 = 0; j0 < last.size; j0 += kTile) {
              const int64_t i1 = std::min(a.size, i0 + kTile), j1 = std::min(last.size, j0 + kTile);
            for (int64_t i = i0; i < i1; ++i)
              for (int64_t j = j0; j < j1; ++j) d[i * a.dst + j] = s[i + j * last.src];
          }
        });
      });
      return;
    }
  }
  dims.pop_back();
  visit_elem_bytes(elem, [&](auto tag) {
    using U = AliasingElement<sizeof(typename decltype(tag)::type)>;
    for_each_row(dst, src, elem, dims, last.size, 1, [&](std::byte* d_row, const std::byte* s_row, int64_t) {
      U* d = reinterpret_cast<U*>(d_row);
      const U* s = reinterpret_cast<const U*>(s_row);
      for (int64_t j = 0; j < last.size; ++j) d[j * last.dst] = s[j * last.src];
    });
  });
}

void permute_copy(void* dst, const void* src, size_t elem, const Shape& in_shape, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = contiguous_strides(in_shape);
  Shape out_shape(perm.size());
  std::vector<int64_t> src_strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = in_shape[static_cast<size_t>(perm[i])];
    src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  copy_strided(dst, contiguous_strides(out_shape), src, src_strides, out_shape, elem);
}

void fill_elements(void* dst_ptr, int64_t count, const void* value, size_t elem) {
  if (count <= 0) return;
  auto* dst = static_cast<std::byte*>(dst_ptr);
  const auto* v = static_cast<const std::byte*>(value);
  const size_t total = static_cast<size_t>(count) * elem;
  if (std::all_of(v, v + elem, [&](std::byte b) { return b == v[0]; })) {
    std::memset(dst, static_cast<int>(v[0]), total);
    return;
  }
  std::memcpy(dst, v, elem);
  for (size_t done = elem; done < total;) {  // doubling copies
    const size_t n = std::min(done, total - done);
    std::memcpy(dst + done, dst, n);
    done += n;
  }
}

}  // namespace mpa
