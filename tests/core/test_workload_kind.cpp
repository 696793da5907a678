// kind / pass / checkpoint names: every value round-trips through its name, and anything else
// (other spellings, case, empty) is refused rather than guessed.
#include <gtest/gtest.h>

#include "core/spec/workload_kind.h"
#include "core/spec/workload_spec.h"

using namespace attnscope;

TEST(WorkloadKind, NamesRoundTrip) {
  for (auto k : {WorkloadKind::attention, WorkloadKind::layer}) EXPECT_EQ(parseWorkloadKind(toString(k)), k);
  for (auto p : {Pass::forward, Pass::train}) EXPECT_EQ(parsePass(toString(p)), p);
  for (auto c : {Checkpoint::none, Checkpoint::attention, Checkpoint::layer}) EXPECT_EQ(parseCheckpoint(toString(c)), c);
  for (auto c : {TpComm::allreduce, TpComm::gather}) EXPECT_EQ(parseTpComm(toString(c)), c);
}

TEST(WorkloadKind, OtherTextIsRefused) {
  for (const char* t : {"", "Layer", "mlp", "attention "}) EXPECT_FALSE(parseWorkloadKind(t)) << t;
  for (const char* t : {"", "backward", "Train", "fwd"}) EXPECT_FALSE(parsePass(t)) << t;
  for (const char* t : {"", "full", "Attention", "Layer", "layers"}) EXPECT_FALSE(parseCheckpoint(t)) << t;
  for (const char* t : {"", "all_reduce", "Gather", "allgather"}) EXPECT_FALSE(parseTpComm(t)) << t;
}

TEST(WorkloadKind, SpecDefaultsAreTodaysWorkload) {
  WorkloadSpec s;
  EXPECT_EQ(s.kind, WorkloadKind::attention);
  EXPECT_EQ(s.pass, Pass::forward);
  EXPECT_EQ(s.checkpoint, Checkpoint::none);
  EXPECT_EQ(s.layers, 1);
  EXPECT_EQ(s.tp, 1);
  EXPECT_EQ(s.tp_comm, TpComm::allreduce);
  WorkloadSpec t = s;
  t.pass = Pass::train;
  EXPECT_NE(s, t);
}
