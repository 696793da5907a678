#pragma once
// Runtime value to compile-time constant, after flash-attention's static_switch.h:
//   ATTNSCOPE_HEADDIM_SWITCH(p.head_dim, kD, [&] { run<T, kD>(p, stream); });
// The lambda sees the padded head-dim bucket (64, 128 or 256) as the constexpr kD.

#include <stdexcept>
#include <string>

#define ATTNSCOPE_HEADDIM_SWITCH(HEAD_DIM, CONST_NAME, ...)                                  \
  [&] {                                                                                      \
    if ((HEAD_DIM) <= 64) {                                                                  \
      constexpr static int CONST_NAME = 64;                                                  \
      return __VA_ARGS__();                                                                  \
    } else if ((HEAD_DIM) <= 128) {                                                          \
      constexpr static int CONST_NAME = 128;                                                 \
      return __VA_ARGS__();                                                                  \
    } else if ((HEAD_DIM) <= 256) {                                                          \
      constexpr static int CONST_NAME = 256;                                                 \
      return __VA_ARGS__();                                                                  \
    }                                                                                        \
    throw std::invalid_argument("no flash kernel instance for head_dim " + std::to_string(HEAD_DIM)); \
  }()
