#pragma once
// The accuracy check's modes as a sweep or a run asks for them (`--check`); what each does and
// how auto resolves are core/check/check_policy.h's.

#include <optional>
#include <string_view>

namespace attnscope {

enum class CheckMode { automatic, full, sampled, off };

inline constexpr std::string_view kCheckModeChoices = "auto, full, sampled, off";
std::string_view toString(CheckMode m);
std::optional<CheckMode> parseCheckMode(std::string_view text);

}  // namespace attnscope
