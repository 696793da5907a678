#include "core/base/utf8_text.h"

namespace attnscope {

std::string validUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    // The length of a well-formed sequence starting here (Unicode Table 3-7), 0 if none.
    size_t len = 0;
    auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xbf) { return i + k < n && p[i + k] >= lo && p[i + k] <= hi; };
    if (c < 0x80) len = 1;
    else if (c >= 0xc2 && c <= 0xdf) len = cont(1) ? 2 : 0;
    else if (c == 0xe0) len = cont(1, 0xa0) && cont(2) ? 3 : 0;
    else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) len = cont(1) && cont(2) ? 3 : 0;
    else if (c == 0xed) len = cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
    else if (c == 0xf0) len = cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    else if (c >= 0xf1 && c <= 0xf3) len = cont(1) && cont(2) && cont(3) ? 4 : 0;
    else if (c == 0xf4) len = cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
    if (len == 0) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
      continue;
    }
    out.append(bytes.substr(i, len));
    i += len;
  }
  return out;
}

bool isValidUtf8(std::string_view text) { return validUtf8(text) == text; }

}  // namespace attnscope
