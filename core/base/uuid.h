#pragma once
// Random (version 4) UUIDs: the identity of a sweep, a run and a recording across databases, so
// that shards of one sweep recombine and a merge done twice adds nothing. Users never type them:
// ids shown stay the short S12 / R40 of each database.

#include <string>
#include <string_view>

namespace attnscope {

// "3f2b8c1e-9a4d-4c7e-8b1f-0d2e6a5c7b90": lower-case, from the operating system's randomness.
std::string newUuid();
// A UUID (version 8: application-defined) computed from `text`: the same text gives the same UUID
// on every machine. For rows saved before schema 6, which have none: a merge derives theirs from
// what they hold, so merging the same old file twice still adds nothing.
std::string contentUuid(std::string_view text);
// True for the 36-character lower- or upper-case form newUuid() writes (any version).
bool isUuid(std::string_view text);

}  // namespace attnscope
