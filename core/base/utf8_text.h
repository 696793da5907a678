#pragma once
// Bytes made fit for text. Paths and what a child process prints are bytes; JSON (nlohmann throws
// type_error 316 on invalid UTF-8), SQLite text and Qt strings need UTF-8.

#include <string>
#include <string_view>

namespace attnscope {

// `bytes` as valid UTF-8: each byte outside a well-formed sequence (overlong forms, surrogates
// and code points past U+10FFFF included) becomes the four characters \xNN; valid text is
// returned unchanged.
std::string validUtf8(std::string_view bytes);
// Whether `text` is well-formed UTF-8 already (validUtf8 would return it unchanged).
bool isValidUtf8(std::string_view text);

}  // namespace attnscope
