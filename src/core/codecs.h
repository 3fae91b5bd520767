#pragma once
// Scalar codecs of FORMATS.md section 1: bf16, fp8 e4m3fn, e8m0 and e2m1 (fp4), bit-exact, round to nearest
// even. Header-only and usable from CUDA device code too, so the kernels and the reference share one
// definition.
#include <math.h>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define MOE_HD __host__ __device__ __forceinline__
#else
#define MOE_HD inline
#endif

namespace moe {

MOE_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

MOE_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// ---- bf16 -------------------------------------------------------------------------------------------------
MOE_HD float bf16_to_f32(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

MOE_HD uint16_t f32_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even; overflow carries into inf as IEEE does
  return static_cast<uint16_t>(u >> 16);
}

// Two values as bf16 bits in one word (lo in the low half): f32_to_bf16's bits for every value that is not a
// NaN; a NaN stays a NaN (on the GPU the hardware's quiet NaN). On the GPU one cvt.rn.bf16x2.f32 converts
// both, where f32_to_bf16 takes about six instructions each; the grouped GEMM's epilogues pack 32 such pairs
// per thread per tile.
MOE_HD uint32_t f32x2_to_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  uint32_t packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
#else
  return f32_to_bf16(lo) | static_cast<uint32_t>(f32_to_bf16(hi)) << 16;
#endif
}

MOE_HD float round_bf16(float f) {
  return bf16_to_f32(f32_to_bf16(f));
}

// ---- fp8 e4m3fn: 1-4-3, bias 7, max 448, no inf, NaN = 0x7f / 0xff
// -----------------------------------------
MOE_HD float fp8e4m3_to_f32(uint8_t c) {
#if defined(__CUDA_ARCH__)
  // The hardware conversion (e4m3 values are exact in fp16); NaN keeps the one bit pattern below.
  if ((c & 0x7f) != 0x7f)
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), __NV_E4M3)));
#endif
  const uint32_t sign = static_cast<uint32_t>(c & 0x80) << 24;
  const uint32_t exp = (c >> 3) & 0xf;
  const uint32_t man = c & 0x7;
  if (exp == 0xf && man == 0x7) return bits_float(sign | 0x7fc00000u);
  if (exp == 0) {
    // Subnormal: man * 2^-9, exact in fp32.
    const float v = static_cast<float>(man) * 0.001953125f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 120u) << 23) | (man << 20));
}

// Clamps to [-448, 448], then rounds to nearest even. NaN maps to 0x7f with the sign kept.
MOE_HD uint8_t f32_to_fp8e4m3(float f) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7f);
#if defined(__CUDA_ARCH__)
  // The hardware conversion: round to nearest even, saturating to +-448 (the same codes as below).
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3));
#endif
  if (a >= 0x43e00000u) return static_cast<uint8_t>(sign | 0x7e);  // |f| >= 448 (inf included): clamp
  if (a < 0x3c800000u) {
    // Below the smallest normal (2^-6): a multiple of 2^-9. Scaling by 2^9 is exact, so nearbyint is RNE.
    const float scaled = bits_float(a) * 512.0f;
    const uint32_t q = static_cast<uint32_t>(rintf(scaled));  // 0..8; 8 is the smallest normal
    return static_cast<uint8_t>(sign | q);
  }
  // Normal: keep 3 mantissa bits, round to nearest even on the dropped 20 bits.
  const uint32_t lsb = (a >> 20) & 1u;
  a += 0x7ffffu + lsb;
  const uint32_t exp = (a >> 23) - 120u;
  const uint32_t man = (a >> 20) & 0x7u;
  uint32_t code = (exp << 3) | man;
  if (code > 0x7e) code = 0x7e;  // rounding up past 448 cannot happen below 464, kept as a guard
  return static_cast<uint8_t>(sign | code);
}

// ---- e8m0: unsigned power of two 2^(code-127); 0xff = NaN
// ---------------------------------------------------
MOE_HD float e8m0_to_f32(uint8_t c) {
  if (c == 0xff) return bits_float(0x7fc00000u);
  if (c == 0) return bits_float(0x00400000u);  // 2^-127 is an fp32 subnormal
  return bits_float(static_cast<uint32_t>(c) << 23);
}

// ---- e2m1 (fp4): codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign
// --------------------------------
MOE_HD float e2m1_to_f32(uint8_t c) {
  const uint32_t m = c & 7u;
  // value = m/2 for m < 4, then 2, 3, 4, 6.
  const float mag =
      m < 4 ? static_cast<float>(m) * 0.5f
            : static_cast<float>((m & 1u) + 2u) * static_cast<float>(1u << ((m >> 1) - 1u)) * 0.5f;
  return (c & 8u) ? -mag : mag;
}

// Clamps to [-6, 6], then rounds to the nearest code, ties to the even code. The sign bit is kept for -0.
MOE_HD uint8_t f32_to_e2m1(float f) {
  const uint32_t u = float_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 28) & 0x8);
  const float a = bits_float(u & 0x7fffffffu);
  if (!(a == a)) return static_cast<uint8_t>(sign | 7);  // NaN has no code: saturate (callers never pass NaN)
  // Midpoints between neighbouring codes: 0.25 0.75 1.25 1.75 2.5 3.5 5. At a tie take the even code.
  uint8_t c;
  if (a < 0.25f)
    c = 0;
  else if (a == 0.25f)
    c = 0;
  else if (a < 0.75f)
    c = 1;
  else if (a <= 1.25f)
    c = 2;
  else if (a < 1.75f)
    c = 3;
  else if (a <= 2.5f)
    c = 4;
  else if (a < 3.5f)
    c = 5;
  else if (a <= 5.0f)
    c = 6;
  else
    c = 7;
  return static_cast<uint8_t>(sign | c);
}

// MX shared exponent as the MX quantisers pick it: X = 2^(floor(log2(amax)) - 2) as an e8m0 code clamped to
// [0, 254]; amax 0 (or NaN) gives code 0.
MOE_HD uint8_t mx_scale_code(float amax) {
  if (!(amax > 0.0f)) return 0;
  int e = 0;
  frexpf(amax, &e);  // amax = f * 2^e with f in [0.5, 1): floor(log2(amax)) = e - 1, exactly
  int code = (e - 1) - 2 + 127;
  code = code < 0 ? 0 : (code > 254 ? 254 : code);
  return static_cast<uint8_t>(code);
}

}  // namespace moe
