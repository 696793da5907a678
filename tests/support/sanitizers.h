#pragma once
// Whether this test binary is built with AddressSanitizer (gcc: __SANITIZE_ADDRESS__, clang:
// __has_feature). Under ASan, resident-memory bounds and address-space limits do not mean what
// they mean in a plain build, so the tests that rely on them say so and skip that one check.

namespace attnscope::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif
#else
inline constexpr bool kAddressSanitized = false;
#endif

}  // namespace attnscope::test
