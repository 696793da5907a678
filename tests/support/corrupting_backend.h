#pragma once
// A backend that is another backend with its results changed after they are computed: the test
// of a check plants a wrong value and expects the run to fail (status wrong, the tensor named).
// Everything else (id, support, plan, allocator, phases) is the inner backend's.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace attnscope::testing {

// What a corruption may change: exactly one of the pointers is set per call.
struct Results {
  std::vector<float>* out = nullptr;
  AttentionGradients* grads = nullptr;
  LayerGradients* layer = nullptr;  // each layer of a stack in turn
};

class CorruptingBackend final : public Backend {
 public:
  // `seconds`: what each pass reports instead of the inner's time (a test that only checks wants
  // the engine's repetition count to stay at its minimum).
  CorruptingBackend(Backend& inner, std::function<void(Results)> corrupt, std::optional<double> seconds = std::nullopt)
      : inner_(inner), corrupt_(std::move(corrupt)), seconds_(seconds) {}
  std::string id() const override { return inner_.id(); }
  std::string device() const override { return inner_.device(); }
  std::string description() const override { return inner_.description(); }
  Availability availability() const override { return inner_.availability(); }
  Support support(const WorkloadSpec& s) const override { return inner_.support(s); }
  MemoryPlan plan(const WorkloadSpec& s) const override { return inner_.plan(s); }
  int64_t memoryAvailable() const override { return inner_.memoryAvailable(); }
  std::unique_ptr<TrackingAllocator> makeAllocator() const override { return inner_.makeAllocator(); }
  std::unique_ptr<Execution> prepare(const WorkloadSpec& s, const HostInputs& in, RunContext& ctx) override {
    return std::make_unique<Exec>(inner_.prepare(s, in, ctx), corrupt_, seconds_);
  }

 private:
  struct Exec final : Execution {
    Exec(std::unique_ptr<Execution> e, std::function<void(Results)> c, std::optional<double> t)
        : inner(std::move(e)), corrupt(std::move(c)), seconds(t) {}
    double run() override {
      const double t = inner->run();
      return seconds ? *seconds : t;
    }
    void output(std::vector<float>& out) override {
      inner->output(out);
      corrupt({&out, nullptr, nullptr});
    }
    bool gradients(AttentionGradients& g) override {
      if (!inner->gradients(g)) return false;
      corrupt({nullptr, &g, nullptr});
      return true;
    }
    bool layerGradients(std::vector<LayerGradients>& g) override {
      if (!inner->layerGradients(g)) return false;
      for (LayerGradients& one : g) corrupt({nullptr, nullptr, &one});
      return true;
    }
    bool layerIntermediates(std::vector<LayerIntermediates>& m) override { return inner->layerIntermediates(m); }
    std::unique_ptr<Execution> inner;
    std::function<void(Results)> corrupt;
    std::optional<double> seconds;
  };
  Backend& inner_;
  std::function<void(Results)> corrupt_;
  std::optional<double> seconds_;
};

}  // namespace attnscope::testing
