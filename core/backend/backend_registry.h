#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"

namespace attnscope {

// The backends this build knows, in registration order. Unavailable backends stay registered
// and say why through availability().
class BackendRegistry {
 public:
  void add(std::unique_ptr<Backend> backend);
  Backend* find(std::string_view id) const;
  std::vector<Backend*> all() const;
  std::vector<std::string> ids() const;
  // Notes for the user about groups of backends, e.g. "GPU backends unavailable: <reason>".
  void addNote(std::string note) { notes_.push_back(std::move(note)); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::string> notes_;
};

}  // namespace attnscope
