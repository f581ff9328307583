// Einsum, general: per operand, repeated labels take the diagonal and labels used nowhere else are summed
// (one strided pass); operands are then contracted left to right, each pair laid out as
// [batch, free_A, contracted] x [batch, contracted, free_B] and multiplied by batched GEMM; a final strided
// pass orders the result as the output term. Ellipsis dims broadcast (size 1 against n) by stride 0.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "backends/cpu/gemm.h"
#include "ops/compute_buffer.h"
#include "ops/op.h"

namespace mpa {

namespace {

constexpr int kEllipsisLabel = 1000;  // ellipsis dim j (right-aligned over the widest operand) = 1000 + j

template <class Acc>
struct Operand {
  std::vector<Acc> data;
  std::vector<int> labels;
  Shape dims;
};

// out[i] = sum over `sum_dims` of src[offset(i) + ...], with arbitrary (also zero) strides.
template <class Acc>
std::vector<Acc> strided_sum(const Acc* src, const Shape& dims, const std::vector<int64_t>& strides,
                             const Shape& sum_dims, const std::vector<int64_t>& sum_strides) {
  const int64_t count = shape_numel(dims), inner = shape_numel(sum_dims);
  std::vector<Acc> out(static_cast<size_t>(count));
  parallel_for(count, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(dims.size()), sidx(sum_dims.size());
    int64_t base = 0;
    for (int64_t rest = begin, d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = rest % dims[static_cast<size_t>(d)];
      rest /= dims[static_cast<size_t>(d)];
      base += idx[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
    }
    for (int64_t i = begin; i < end; ++i) {
      Acc acc = 0;
      int64_t off = 0;
      std::fill(sidx.begin(), sidx.end(), 0);
      for (int64_t j = 0; j < inner; ++j) {
        acc += src[base + off];
        for (size_t d = sum_dims.size(); d-- > 0;) {
          off += sum_strides[d];
          if (++sidx[d] < sum_dims[d]) break;
          off -= sum_strides[d] * sum_dims[d];
          sidx[d] = 0;
        }
      }
      out[static_cast<size_t>(i)] = acc;
      for (size_t d = dims.size(); d-- > 0;) {
        base += strides[d];
        if (++idx[d] < dims[d]) break;
        base -= strides[d] * dims[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& dims) {
  std::vector<int64_t> s(dims.size());
  for (size_t d = dims.size(), acc = 1; d-- > 0;) s[d] = static_cast<int64_t>(acc), acc *= static_cast<size_t>(dims[d]);
  return s;
}

// Strides of `labels` (with sizes from label_size) in operand x: summed over repeats (diagonal), 0 where
// x lacks the label or holds it with size 1 (broadcast).
template <class Acc>
std::vector<int64_t> label_strides(const Operand<Acc>& x, const std::vector<int>& labels) {
  const auto s = contiguous_strides(x.dims);
  std::vector<int64_t> out;
  for (int l : labels) {
    int64_t stride = 0;
    for (size_t d = 0; d < x.labels.size(); ++d)
      if (x.labels[d] == l && x.dims[d] != 1) stride += s[d];
    out.push_back(stride);
  }
  return out;
}

template <class Acc>
Operand<Acc> rearrange(const Operand<Acc>& x, const std::vector<int>& keep, const std::vector<int>& sum,
                       const std::map<int, int64_t>& size) {
  Operand<Acc> r;
  r.labels = keep;
  Shape sum_dims;
  for (int l : keep) r.dims.push_back(size.at(l));
  for (int l : sum) sum_dims.push_back(size.at(l));
  r.data = strided_sum(x.data.data(), r.dims, label_strides(x, keep), sum_dims, label_strides(x, sum));
  return r;
}

bool contains(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

class EinsumOp : public OpKernel {
 public:
  explicit EinsumOp(const OpInit& init) {
    for (char ch : init.get_string("equation", ""))
      if (ch != ' ') equation_ += ch;
    if (!(!equation_.empty())) fail(init.node().label() + ": attribute 'equation' is missing or empty");
  }

  void compute(KernelContext& ctx) const override {
    const std::string label = ctx.node().label();
    if (!(ctx.num_inputs() >= 1)) fail(label + ": Einsum needs at least one input");
    const DType dtype = ctx.input(0).dtype();
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      if (!(ctx.input(i).dtype() == dtype)) fail(label + ": inputs differ in element type");
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = std::conditional_t<std::is_integral_v<T>, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>,
                                     acc_t<T>>;
      run_typed<T, Acc>(ctx, label);
    };
    switch (dtype) {
      case DType::Int8: return run(TypeTag<int8_t>{});
      case DType::Int16: return run(TypeTag<int16_t>{});
      case DType::Int32: return run(TypeTag<int32_t>{});
      case DType::Int64: return run(TypeTag<int64_t>{});
      case DType::UInt8: return run(TypeTag<uint8_t>{});
      case DType::UInt16: return run(TypeTag<uint16_t>{});
      case DType::UInt32: return run(TypeTag<uint32_t>{});
      case DType::UInt64: return run(TypeTag<uint64_t>{});
      default: visit_float(dtype, run);
    }
  }

 private:
  // Labels of one term ("ab...c") for an operand of the given rank; ellipsis dims right-aligned to width.
  static std::vector<int> parse_term(const std::string& label, const std::string& term, int64_t rank, int64_t width,
                                     bool is_output) {
    std::vector<int> labels;
    int64_t letters = 0;
    for (char ch : term) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
    const size_t ellipsis = term.find("...");
    const int64_t ell_rank = is_output ? width : rank - letters;
    if (!(ellipsis != std::string::npos ? ell_rank >= 0 : (is_output || rank == letters)))
      fail(label + ": term '" + term + "' does not match an input of rank " + std::to_string(rank));
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t j = 0; j < ell_rank; ++j)
          labels.push_back(kEllipsisLabel + static_cast<int>(width - ell_rank + j));
        i += 2;
      } else {
        if (!(std::isalpha(static_cast<unsigned char>(term[i]))))
          fail(label + ": bad character '" + std::string(1, term[i]) + "' in equation");
        labels.push_back(term[i]);
      }
    }
    return labels;
  }

  template <class T, class Acc>
  void run_typed(KernelContext& ctx, const std::string& label) const {
    const size_t arrow = equation_.find("->");
    const std::string lhs = equation_.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t start = 0;;) {
      const size_t comma = lhs.find(',', start);
      terms.push_back(lhs.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (!(terms.size() == ctx.num_inputs()))
      fail(label + ": equation '" + equation_ + "' has " + std::to_string(terms.size()) + " terms for " +
           std::to_string(ctx.num_inputs()) + " inputs");
    int64_t width = 0;  // widest ellipsis
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t letters = 0;
      for (char ch : terms[i]) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
      if (terms[i].find("...") != std::string::npos) width = std::max(width, ctx.input(i).rank() - letters);
    }
    std::vector<Operand<Acc>> ops(terms.size());
    std::map<int, int64_t> size;
    std::map<int, int> count;  // occurrences over all inputs (for the implicit output)
    for (size_t i = 0; i < terms.size(); ++i) {
      const Tensor& t = ctx.input(i);
      ops[i].labels = parse_term(label, terms[i], t.rank(), width, false);
      ops[i].dims = t.shape();
      std::vector<Acc> holder;
      ops[i].data.resize(static_cast<size_t>(t.numel()));
      const T* p = t.data<T>();
      for (int64_t k = 0; k < t.numel(); ++k) ops[i].data[static_cast<size_t>(k)] = static_cast<Acc>(load(p[k]));
      for (size_t d = 0; d < ops[i].labels.size(); ++d) {
        const int l = ops[i].labels[d];
        const int64_t n = t.dim(static_cast<int>(d));
        auto [it, fresh] = size.emplace(l, n);
        if (!(fresh || it->second == n || it->second == 1 || n == 1))
          fail(label + ": label '" + (l < kEllipsisLabel ? std::string(1, static_cast<char>(l)) : "...") +
               "' has sizes " + std::to_string(it->second) + " and " + std::to_string(n));
        if (it->second == 1) it->second = n;
        ++count[l];
      }
    }
    std::vector<int> output;
    if (arrow != std::string::npos) {
      output = parse_term(label, equation_.substr(arrow + 2), width, width, true);
      for (size_t k = 0; k < output.size(); ++k) {
        const std::string name(1, static_cast<char>(output[k]));
        if (!(size.count(output[k]))) fail(label + ": output label '" + name + "' is not in any input");
        if (!(std::find(output.begin(), output.begin() + static_cast<std::ptrdiff_t>(k), output[k]) ==
              output.begin() + static_cast<std::ptrdiff_t>(k)))
          fail(label + ": output label '" + name + "' appears twice");
      }
    } else {
      for (int64_t j = 0; j < width; ++j) output.push_back(kEllipsisLabel + static_cast<int>(j));
      for (auto [l, c] : count)
        if (l < kEllipsisLabel && c == 1) output.push_back(l);
    }
    // Labels needed after operand i: in the output or in a later operand.
    auto needed_after = [&](size_t i) {
      std::set<int> need(output.begin(), output.end());
      for (size_t j = i + 1; j < ops.size(); ++j) need.insert(ops[j].labels.begin(), ops[j].labels.end());
      return need;
    };
    // Step 1: diagonals and sums within each operand.
    for (size_t i = 0; i < ops.size(); ++i) {
      std::set<int> need = needed_after(i);
      for (size_t j = 0; j < i; ++j) need.insert(ops[j].labels.begin(), ops[j].labels.end());
      std::vector<int> keep, sum;
      for (int l : ops[i].labels) {
        if (contains(keep, l) || contains(sum, l)) continue;
        (need.count(l) ? keep : sum).push_back(l);
      }
      if (sum.empty() && keep.size() == ops[i].labels.size()) continue;
      ops[i] = rearrange(ops[i], keep, sum, size);
    }
    // Step 2: contract left to right.
    Operand<Acc> cur = std::move(ops[0]);
    for (size_t i = 1; i < ops.size(); ++i) {
      const Operand<Acc>& b = ops[i];
      const std::set<int> need = needed_after(i);
      std::vector<int> batch, a_free, contracted, b_free;
      for (int l : cur.labels) {
        if (!contains(b.labels, l))
          a_free.push_back(l);
        else
          (need.count(l) ? batch : contracted).push_back(l);
      }
      for (int l : b.labels)
        if (!contains(cur.labels, l)) b_free.push_back(l);
      auto concat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
        x.insert(x.end(), y.begin(), y.end());
        x.insert(x.end(), z.begin(), z.end());
        return x;
      };
      auto prod = [&](const std::vector<int>& ls) {
        int64_t p = 1;
        for (int l : ls) p *= size.at(l);
        return p;
      };
      const Operand<Acc> a2 = rearrange(cur, concat(batch, a_free, contracted), {}, size);
      const Operand<Acc> b2 = rearrange(b, concat(batch, contracted, b_free), {}, size);
      const int64_t nb = prod(batch), M = prod(a_free), K = prod(contracted), N = prod(b_free);
      Operand<Acc> r;
      r.labels = concat(batch, a_free, b_free);
      for (int l : r.labels) r.dims.push_back(size.at(l));
      r.data.resize(static_cast<size_t>(nb * M * N));
      std::vector<int64_t> ao(static_cast<size_t>(nb)), bo(ao.size()), co(ao.size());
      for (int64_t j = 0; j < nb; ++j)
        ao[static_cast<size_t>(j)] = j * M * K, bo[static_cast<size_t>(j)] = j * K * N,
        co[static_cast<size_t>(j)] = j * M * N;
      const cpu::GemmMath math = gemm_math(ctx.config(), ctx.input(0).dtype());
      if (nb * M * N > 0)
        cpu::gemm_batched<Acc>(false, false, M, N, K, Acc(1), a2.data.data(), K, ao.data(), b2.data.data(), N,
                               bo.data(), Acc(0), r.data.data(), N, co.data(), nb, math);
      cur = std::move(r);
    }
    // Step 3: order as the output.
    if (cur.labels != output) cur = rearrange(cur, output, {}, size);
    Tensor& y = ctx.allocate_output(0, ctx.input(0).dtype(), cur.dims);
    T* py = y.data<T>();
    for (int64_t k = 0; k < y.numel(); ++k)
      py[k] = store<T>(static_cast<compute_t<T>>(cur.data[static_cast<size_t>(k)]));
  }

  std::string equation_;
};

}  // namespace

MPA_OP_TRAITS("", "Einsum", {.precision = PrecisionClass::Accumulating, .sums_in = SumsIn::GemmSetting});
MPA_REGISTER_OP("", "Einsum", EinsumOp, 12);

}  // namespace mpa
