#pragma once
// Two backends run one train pass on the same inputs and their dQ, dK, dV agree element by element
// within `tolerance` (e.g. a materialising and a fused backend in fp32). Header-only for gtest tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/backend/backend.h"

namespace attnscope::testing {

inline void expectGradientsAgree(Backend& a, Backend& b, const WorkloadSpec& spec, double tolerance) {
  const HostInputs in = HostInputs::generate(spec);
  AttentionGradients g[2];
  Backend* backends[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    auto alloc = backends[i]->makeAllocator();
    RunContext ctx(*alloc);
    auto exec = backends[i]->prepare(spec, in, ctx);
    exec->run();
    ASSERT_TRUE(exec->gradients(g[i])) << backends[i]->id();
  }
  for (auto member : {&AttentionGradients::dq, &AttentionGradients::dk, &AttentionGradients::dv}) {
    ASSERT_EQ((g[0].*member).size(), (g[1].*member).size());
    double worst = 0;
    for (size_t e = 0; e < (g[0].*member).size(); ++e)
      worst = std::max(worst, std::fabs(double((g[0].*member)[e]) - (g[1].*member)[e]));
    EXPECT_LT(worst, tolerance) << a.id() << " vs " << b.id();
  }
}

}  // namespace attnscope::testing
