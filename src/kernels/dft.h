// Discrete Fourier transforms of one line, written once for every backend (DFT, STFT).
//
// Two ways: numpy's mixed-radix FFT (NumpyFftPlan, below) for lengths made of the factors 2, 3, 4 and 5,
// which gives numpy's float32 complex transforms bit for bit (the ONNX reference's expected outputs carry
// their rounding), and a direct O(n * bins) sum over a twiddle table (dft_line) for any length (primes
// included). Twiddles are computed in double and rounded once into the accumulation type A, so a float
// transform differs from the exact one by its sums alone, as a GPU FFT computing in float does.
#pragma once
#include <stdint.h>

#include <cmath>
#include <utility>
#include <vector>

#include "tensor/hd.h"

namespace mpa {

// cos and sin of 2*pi*m/n for m in [0, n): the twiddle of (j, k) is entry (j * k) mod n. Built on the
// host; a device backend copies the two tables.
template <class A>
struct Twiddles {
  explicit Twiddles(int64_t n) : n(n), cos(static_cast<size_t>(n)), sin(static_cast<size_t>(n)) {
    for (int64_t m = 0; m < n; ++m) {
      const double angle = 2.0 * M_PI * static_cast<double>(m) / static_cast<double>(n);
      cos[static_cast<size_t>(m)] = static_cast<A>(std::cos(angle));
      sin[static_cast<size_t>(m)] = static_cast<A>(std::sin(angle));
    }
  }
  int64_t n;
  std::vector<A> cos, sin;
};

// y[k] = scale * sum_{j < count} x[j] * exp(-+2*pi*i*j*k/n) for k in [0, bins), the sign + when inverse.
// x is `count` complex values (re, im) `x_stride` apart, im == nullptr for a real line; count <= n is
// the zero-padded or truncated line. cos/sin: the n entries of Twiddles. Writes y_re/y_im `y_stride` apart
// (y_im == nullptr: real part only).
template <class A>
MPA_HD void dft_line(const A* x_re, const A* x_im, int64_t count, int64_t x_stride, const A* cos, const A* sin,
                     int64_t n, int64_t bins, bool inverse, A scale, A* y_re, A* y_im, int64_t y_stride) {
  const A sign = inverse ? A(1) : A(-1);
  for (int64_t k = 0; k < bins; ++k) {
    A re = A(0), im = A(0);
    int64_t m = 0;  // (j * k) mod n, stepped without overflow
    for (int64_t j = 0; j < count; ++j) {
      const A c = cos[m], s = sign * sin[m];
      const A a = x_re[j * x_stride], b = x_im ? x_im[j * x_stride] : A(0);
      re += a * c - b * s;
      im += a * s + b * c;
      m += k % n;
      if (m >= n) m -= n;
    }
    y_re[k * y_stride] = re * scale;
    if (y_im) y_im[k * y_stride] = im * scale;
  }
}

}  // namespace mpa

namespace mpa {

// [SECTION] Mixed-radix FFT in numpy's order
//
// numpy.fft (pocketfft's cfftp) computes float32 transforms in float32, so the expected outputs of the ONNX
// DFT tests carry its rounding: a value that is zero in exact math comes out as float noise (2^-22 and
// more) that no other summation order reproduces. This plan runs pocketfft's radix-2/3/4/5 passes with
// its factorisation, twiddle layout and operation order, so lengths made of those factors give numpy's
// bits; other lengths (a factor of 8 in the length, or a prime factor above 5) use dft_line.

template <class A>
struct Complex {
  A r, i;
};
template <class A>
Complex<A> operator+(Complex<A> a, Complex<A> b) {
  return {a.r + b.r, a.i + b.i};
}
template <class A>
Complex<A> operator-(Complex<A> a, Complex<A> b) {
  return {a.r - b.r, a.i - b.i};
}
template <class A>
Complex<A> operator*(Complex<A> a, A s) {
  return {a.r * s, a.i * s};
}

template <class A>
class NumpyFftPlan {
 public:
  explicit NumpyFftPlan(int64_t n) : n_(n) {
    int64_t len = n;
    if (n < 1 || len % 8 == 0) return;  // pocketfft's radix-8 pass is not reproduced
    while (len % 4 == 0) add(4), len /= 4;
    if (len % 2 == 0) {
      len /= 2;
      add(2);
      std::swap(factors_.front().radix, factors_.back().radix);
    }
    for (int64_t d = 3; d * d <= len; d += 2)
      while (len % d == 0) add(d), len /= d;
    if (len > 1) add(len);
    for (const Factor& f : factors_)
      if (f.radix > 5) return;
    supported_ = true;
    int64_t l1 = 1;
    for (Factor& f : factors_) {
      const int64_t ido = n / (l1 * f.radix);
      f.twiddle.resize(static_cast<size_t>((f.radix - 1) * (ido - 1)));
      for (int64_t j = 1; j < f.radix; ++j)
        for (int64_t i = 1; i < ido; ++i) {
          const double angle = 2.0 * M_PI * static_cast<double>((j * l1 * i) % n) / static_cast<double>(n);
          f.twiddle[static_cast<size_t>((j - 1) * (ido - 1) + i - 1)] = {static_cast<A>(std::cos(angle)),
                                                                         static_cast<A>(std::sin(angle))};
        }
      l1 *= f.radix;
    }
  }

  bool supported() const { return supported_; }

  // Transforms the n values of c in place (forward: exp(-i...)), scaled by fct; ch: scratch of n values.
  void run(Complex<A>* c, Complex<A>* ch, bool forward, A fct) const {
    if (forward)
      pass_all<true>(c, ch, fct);
    else
      pass_all<false>(c, ch, fct);
  }

 private:
  struct Factor {
    int64_t radix;
    std::vector<Complex<A>> twiddle;
  };
  void add(int64_t radix) { factors_.push_back({radix, {}}); }

  // v * w (backward) or v * conj(w) (forward).
  template <bool fwd>
  static Complex<A> special_mul(Complex<A> v, Complex<A> w) {
    return fwd ? Complex<A>{v.r * w.r + v.i * w.i, v.i * w.r - v.r * w.i}
               : Complex<A>{v.r * w.r - v.i * w.i, v.r * w.i + v.i * w.r};
  }
  template <bool fwd>
  static Complex<A> rot90(Complex<A> a) {
    return fwd ? Complex<A>{a.i, -a.r} : Complex<A>{-a.i, a.r};
  }

  template <bool fwd>
  void pass_all(Complex<A>* c, Complex<A>* ch, A fct) const {
    if (n_ == 1) {
      c[0] = c[0] * fct;
      return;
    }
    int64_t l1 = 1;
    Complex<A>*p1 = c, *p2 = ch;
    for (const Factor& f : factors_) {
      const int64_t ido = n_ / (l1 * f.radix);
      if (f.radix == 4)
        pass4<fwd>(ido, l1, p1, p2, f.twiddle.data());
      else if (f.radix == 2)
        pass2<fwd>(ido, l1, p1, p2, f.twiddle.data());
      else if (f.radix == 3)
        pass3<fwd>(ido, l1, p1, p2, f.twiddle.data());
      else
        pass5<fwd>(ido, l1, p1, p2, f.twiddle.data());
      std::swap(p1, p2);
      l1 *= f.radix;
    }
    if (p1 != c) {
      for (int64_t i = 0; i < n_; ++i) c[i] = fct != A(1) ? ch[i] * fct : ch[i];
    } else if (fct != A(1)) {
      for (int64_t i = 0; i < n_; ++i) c[i] = c[i] * fct;
    }
  }

  // CC(a, b, k) = cc[a + ido * (b + radix * k)], CH(a, k, b) = ch[a + ido * (k + l1 * b)], WA(x, i) =
  // wa[i - 1 + x * (ido - 1)], as pocketfft indexes them.
  template <bool fwd>
  static void pass2(int64_t ido, int64_t l1, const Complex<A>* cc, Complex<A>* ch, const Complex<A>* wa) {
    for (int64_t k = 0; k < l1; ++k)
      for (int64_t i = 0; i < ido; ++i) {
        const Complex<A> a = cc[i + ido * (0 + 2 * k)], b = cc[i + ido * (1 + 2 * k)];
        ch[i + ido * (k + l1 * 0)] = a + b;
        ch[i + ido * (k + l1 * 1)] = i == 0 ? a - b : special_mul<fwd>(a - b, wa[i - 1]);
      }
  }

  template <bool fwd>
  static void pass3(int64_t ido, int64_t l1, const Complex<A>* cc, Complex<A>* ch, const Complex<A>* wa) {
    const A tw1r = A(-0.5), tw1i = (fwd ? A(-1) : A(1)) * A(0.8660254037844386467637231707529362L);
    for (int64_t k = 0; k < l1; ++k)
      for (int64_t i = 0; i < ido; ++i) {
        const auto CC = [&](int64_t b) { return cc[i + ido * (b + 3 * k)]; };
        const Complex<A> t0 = CC(0), t1 = CC(1) + CC(2), t2 = CC(1) - CC(2);
        ch[i + ido * k] = t0 + t1;
        const Complex<A> ca = t0 + t1 * tw1r, cb{-t2.i * tw1i, t2.r * tw1i};
        Complex<A>& u1 = ch[i + ido * (k + l1 * 1)];
        Complex<A>& u2 = ch[i + ido * (k + l1 * 2)];
        if (i == 0) {
          u1 = ca + cb;
          u2 = ca - cb;
        } else {
          u1 = special_mul<fwd>(ca + cb, wa[i - 1]);
          u2 = special_mul<fwd>(ca - cb, wa[i - 1 + (ido - 1)]);
        }
      }
  }

  template <bool fwd>
  static void pass4(int64_t ido, int64_t l1, const Complex<A>* cc, Complex<A>* ch, const Complex<A>* wa) {
    for (int64_t k = 0; k < l1; ++k)
      for (int64_t i = 0; i < ido; ++i) {
        const auto CC = [&](int64_t b) { return cc[i + ido * (b + 4 * k)]; };
        const Complex<A> t2 = CC(0) + CC(2), t1 = CC(0) - CC(2), t3 = CC(1) + CC(3);
        const Complex<A> t4 = rot90<fwd>(CC(1) - CC(3));
        const auto CH = [&](int64_t b) -> Complex<A>& { return ch[i + ido * (k + l1 * b)]; };
        if (i == 0) {
          CH(0) = t2 + t3;
          CH(2) = t2 - t3;
          CH(1) = t1 + t4;
          CH(3) = t1 - t4;
        } else {
          CH(0) = t2 + t3;
          CH(1) = special_mul<fwd>(t1 + t4, wa[i - 1]);
          CH(2) = special_mul<fwd>(t2 - t3, wa[i - 1 + (ido - 1)]);
          CH(3) = special_mul<fwd>(t1 - t4, wa[i - 1 + 2 * (ido - 1)]);
        }
      }
  }

  template <bool fwd>
  static void pass5(int64_t ido, int64_t l1, const Complex<A>* cc, Complex<A>* ch, const Complex<A>* wa) {
    const A sign = fwd ? A(-1) : A(1);
    const A tw1r = A(0.3090169943749474241022934171828191L), tw1i = sign * A(0.9510565162951535721164393333793821L);
    const A tw2r = A(-0.8090169943749474241022934171828191L), tw2i = sign * A(0.5877852522924731291687059546390728L);
    for (int64_t k = 0; k < l1; ++k)
      for (int64_t i = 0; i < ido; ++i) {
        const auto CC = [&](int64_t b) { return cc[i + ido * (b + 5 * k)]; };
        const auto CH = [&](int64_t b) -> Complex<A>& { return ch[i + ido * (k + l1 * b)]; };
        const Complex<A> t0 = CC(0), t1 = CC(1) + CC(4), t4 = CC(1) - CC(4), t2 = CC(2) + CC(3), t3 = CC(2) - CC(3);
        CH(0) = {t0.r + t1.r + t2.r, t0.i + t1.i + t2.i};
        // pocketfft's PARTSTEP5: outputs u1 and u2 = 5 - u1 from the weights (twar, twbr) and (twai, twbi).
        const auto step = [&](int64_t u1, int64_t u2, A twar, A twbr, A twai, A twbi) {
          const Complex<A> ca{t0.r + twar * t1.r + twbr * t2.r, t0.i + twar * t1.i + twbr * t2.i};
          const Complex<A> cb{-(twai * t4.i + twbi * t3.i), twai * t4.r + twbi * t3.r};
          if (i == 0) {
            CH(u1) = ca + cb;
            CH(u2) = ca - cb;
          } else {
            CH(u1) = special_mul<fwd>(ca + cb, wa[i - 1 + (u1 - 1) * (ido - 1)]);
            CH(u2) = special_mul<fwd>(ca - cb, wa[i - 1 + (u2 - 1) * (ido - 1)]);
          }
        };
        step(1, 4, tw1r, tw2r, tw1i, tw2i);
        step(2, 3, tw2r, tw1r, tw2i, -tw1i);
      }
  }

  int64_t n_;
  bool supported_ = false;
  std::vector<Factor> factors_;
};

}  // namespace mpa
