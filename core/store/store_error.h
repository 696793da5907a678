#pragma once
// The store's one exception type, with the kind of failure a front end acts on.

#include <stdexcept>
#include <string>

namespace attnscope {

class StoreError : public std::runtime_error {
 public:
  // read_only: a write was asked of a file or folder that cannot be written; full: the disk is,
  // or a limit that acts like a full disk (the file size limit, a quota); replaced: the
  // database's file, -wal or -shm was deleted or replaced under this connection.
  enum class Kind { not_attnscope, newer_schema, corrupt, io, not_found, invalid, read_only, full, replaced };
  StoreError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// full for the errors that mean no more bytes fit (ENOSPC, EFBIG from `ulimit -f`, EDQUOT), io else.
StoreError::Kind storeErrorKindOf(int err);

}  // namespace attnscope
