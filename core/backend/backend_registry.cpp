#include "core/backend/backend_registry.h"

#include <stdexcept>

namespace attnscope {

void BackendRegistry::add(std::unique_ptr<Backend> backend) {
  if (find(backend->id())) throw std::logic_error("backend registered twice: " + backend->id());
  backends_.push_back(std::move(backend));
}

Backend* BackendRegistry::find(std::string_view id) const {
  for (const auto& b : backends_)
    if (b->id() == id) return b.get();
  return nullptr;
}

std::vector<Backend*> BackendRegistry::all() const {
  std::vector<Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

std::vector<std::string> BackendRegistry::ids() const {
  std::vector<std::string> out;
  for (const auto& b : backends_) out.push_back(b->id());
  return out;
}

}  // namespace attnscope
