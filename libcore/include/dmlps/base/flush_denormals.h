#pragma once

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace dmlps {

// Flushes denormal results and inputs to zero while it lives, on x86 (the
// control register is per thread, so it covers the calling thread only).
//
// Momentum decays a velocity by μ at every step where a parameter's gradient
// is 0 (a pixel that is 0 in every image of a batch), and after a few
// hundred steps the velocity is denormal. Each multiply and add on a
// denormal takes a microcode assist, ten to a hundred times as long: the
// server's momentum step on a 7,850-value model then took 1.5 ms instead of
// a few microseconds, and a worker's local steps slowed the same way. A
// denormal velocity, below 1.2e-38, moves no parameter of a normal size, so
// flushing it changes no result that matters. Optimizer steps wrap their
// arithmetic in one of these; code that calls out (to Python, to a user's
// model) should not, as the setting would leak into it.
class FlushDenormals {
 public:
  FlushDenormals() { SetCsr(saved_ | kFtzDaz); }
  ~FlushDenormals() { SetCsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  static constexpr unsigned kFtzDaz = 0x8040;  // FTZ (bit 15) and DAZ (bit 6)
#if defined(__SSE__)
  static unsigned GetCsr() { return _mm_getcsr(); }
  static void SetCsr(unsigned csr) { _mm_setcsr(csr); }
#else
  static unsigned GetCsr() { return 0; }
  static void SetCsr(unsigned /*csr*/) {}
#endif
  const unsigned saved_ = GetCsr();
};

}  // namespace dmlps
