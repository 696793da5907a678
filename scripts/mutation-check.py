#!/usr/bin/env python3
"""Applies each hand-written mutation in MUTANTS to the source, one at a time, rebuilds the test
that should kill it, runs that test, and restores the file. A mutant that the test does not kill
(the test still passes) is a gap: the list and outcomes are in docs/RELIABILITY.md.

usage: python3 scripts/mutation-check.py BUILD_DIR [NAME ...]
BUILD_DIR is a configured CMake build (e.g. build/cpu: Release, CUDA and GUI off). With NAMEs
only those mutants run. Exit status: 0 when every mutant was killed, 1 otherwise.
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# name, file, exact text, replacement, test target, test path in the build dir, gtest filter
MUTANTS = [
    ("plan-v-fp32-8-bytes-short", "kernels/cpu/cpu_reference_backend.cpp",
     'p.add("v fp32", spec.kvElements() * 4,', 'p.add("v fp32", spec.kvElements() * 4 - 8,',
     "test_plan_buffers", "tests/cpu/test_plan_buffers", "*"),
    ("plan-flash-lse-8-bytes-short", "kernels/cpu/cpu_flash_backend.cpp",
     'p.add("lse", spec.batch * spec.heads * spec.seq_q * 4,', 'p.add("lse", spec.batch * spec.heads * spec.seq_q * 4 - 8,',
     "test_plan_buffers", "tests/cpu/test_plan_buffers", "*"),
    ("accuracy-nan-dropped", "core/check/reference.cpp",
     "        if (!std::isfinite(want) || !std::isfinite(got)) {\n          e = INFINITY;",
     "        if (false) {\n          e = INFINITY;",
     "test_accuracy_check", "tests/core/test_accuracy_check", "*NonFiniteOutput*"),
    ("tolerance-fp16-loosened", "core/check/reference.cpp",
     "case DType::fp16: return 4e-3;", "case DType::fp16: return 5e-3;",
     "test_accuracy_check", "tests/core/test_accuracy_check", "*Tolerances*"),
    ("npy-bf16-check-disabled", "core/inputs/run_files.cpp",
     "if (dtype == DType::bf16 && bf16ToFloat(floatToBf16(f)) != f)",
     "if (false && dtype == DType::bf16 && bf16ToFloat(floatToBf16(f)) != f)",
     "test_npy_checks", "tests/core/test_npy_checks", "*Bf16*"),
    ("npy-mask-dtype-check-disabled", "core/inputs/run_files.cpp",
     'if (h.descr != "|b1" && h.descr != "|u1") throw', 'if (false) throw',
     "test_npy_checks", "tests/core/test_npy_checks", "*Dtype*"),
    ("npy-mask-shape-check-disabled", "core/inputs/run_files.cpp",
     "      if (h.shape != want)\n", "      if (h.shape.size() != want.size())\n",
     "test_npy_checks", "tests/core/test_npy_checks", "*Shape*"),
    ("spec-text-six-digits", "core/spec/spec_fields.cpp",
     "return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);", "return std::to_string(v);",
     "test_spec_round_trip", "tests/core/test_spec_round_trip", "*"),
    # CUDA host logic: needs a CUDA build (ATTNSCOPE_CUDA=ON) as BUILD_DIR, no device.
    ("cuda-additive-mask-8-bytes-short", "kernels/cuda/cuda_plans.cpp",
     "z.bias = planes * z.chunk_rows * s.seqKv() * eb;", "z.bias = planes * z.chunk_rows * s.seqKv() * eb - 8;",
     "test_cuda_plan_sizes", "tests/cuda/test_cuda_plan_sizes", "*"),
    ("cuda-lse-per-kv-head", "kernels/cuda/cuda_plans.cpp",
     "f.lse = s.batch * s.heads * s.seq_q * 4;", "f.lse = s.batch * s.kvHeads() * s.seq_q * 4;",
     "test_cuda_plan_sizes", "tests/cuda/test_cuda_plan_sizes", "*"),
    # Races: need the TSan build (cmake --preset tsan) as BUILD_DIR; TSan's report fails the test.
    ("store-save-run-unlocked", "core/store/store_runs.cpp",
     "errors.front().message + \")\");\n  std::lock_guard lock(impl_->mutex);\n  impl_->writer();",
     "errors.front().message + \")\");\n  impl_->writer();",
     "test_concurrency", "tests/concurrency/test_concurrency", "*"),
    ("task-pool-busy-unlocked", "kernels/cpu/task_pool.cpp",
     "    {\n      std::lock_guard lock(mu_);\n      if (--busy_ == 0) done_.notify_all();\n    }",
     "    if (--busy_ == 0) done_.notify_all();",
     "test_concurrency", "tests/concurrency/test_concurrency", "*"),
    # Code other engineers landed this session (store hardening), tried the same way.
    ("store-read-mode-not-query-only", "core/store/store_open.cpp",
     '      s.db->exec("PRAGMA query_only = 1");\n', "",
     "test_store_files", "tests/store/test_store_files", "*"),
    ("store-readonly-file-not-refused-for-writing", "core/store/store_open.cpp",
     "  if (facts.exists && !writable(path))\n", "  if (false && facts.exists && !writable(path))\n",
     "test_store_files", "tests/store/test_store_files", "*"),
    ("store-empty-file-read-gets-schema", "core/store/store_open.cpp",
     "  if (facts.empty) return;  // reads as an empty store", "  if (false) return;  // reads as an empty store",
     "test_store_files", "tests/store/test_store_files", "*"),
    ("store-dead-owner-seen-alive", "core/store/store_owner.cpp",
     "return ticks != 0 && ticks == owner.start_ticks ? OwnerState::alive : OwnerState::gone;",
     "return OwnerState::alive;",
     "test_store_files", "tests/store/test_store_files", "*"),
    ("output-over-database-allowed", "core/files/output_file.cpp",
     '  if (n < 16 || std::memcmp(header, "SQLite format 3", 16) != 0) return;', "  return;",
     "test_store_files", "tests/store/test_store_files", "*"),
    ("output-same-file-as-database-allowed", "core/files/output_file.cpp",
     "    if (sameFile(t.st, statOf(db_path)))\n", "    if (false)\n",
     "test_store_files", "tests/store/test_store_files", "*"),
    # Outputs (issue 18): what is already at an output's name, signals, the file size limit.
    ("output-anything-replaced", "core/files/output_file.cpp",
     "  if (::lstat(out.c_str(), &t.st) != 0) return t;\n",
     "  if (::lstat(out.c_str(), &t.st) != 0) return t;\n"
     "  if (!S_ISDIR(t.st.st_mode)) { t.kind = OutputTarget::Kind::regular; return t; }\n",
     "test_store_files", "tests/store/test_store_files", "OutputTargets.*"),
    ("output-fifo-for-any-format", "core/files/output_file.cpp",
     "  if (rule == OutputRule::text && (S_ISFIFO(t.st.st_mode) || S_ISCHR(t.st.st_mode))) {",
     "  if (S_ISFIFO(t.st.st_mode) || S_ISCHR(t.st.st_mode)) {",
     "test_store_files", "tests/store/test_store_files", "OutputTargets.*"),
    ("output-side-file-names-allowed", "core/files/output_file.cpp",
     "      if (isSideFileName(t, db))", "      if (false && isSideFileName(t, db))",
     "test_store_files", "tests/store/test_store_files", "OutputTargets.TheDatabase*"),
    ("output-temporary-named-after-output", "core/files/output_file.cpp",
     'createTemporaryIn(folderOf(target_), "tmp", temp_)',
     'createTemporaryIn(folderOf(target_), (nameOf(target_) + ".tmp").c_str(), temp_)',
     "test_store_files", "tests/store/test_store_files", "OutputTargets.Temporary*"),
    ("output-signal-not-held", "core/files/output_file.cpp",
     "  if (use_ == OutputUse::kept) interrupt_.emplace();\n", "",
     "test_store_files", "tests/store/test_store_files", "OutputTargets.ASignal*"),
    ("run-files-follow-links-and-fifos", "core/inputs/npy.cpp",
     "  writeOutputFile(path, {prefix, data}, OutputRule::entry, use);",
     "  writeOutputFile(path, {prefix, data}, OutputRule::text, use);",
     "test_npy_reader", "tests/core/test_npy_reader", "NpyReader.TheWriter*"),
    ("dump-names-not-checked", "app/commands_run.cpp",
     "    checkDumpEntries(dir, spec, dbPath);\n", "",
     "test_cli_limits", "tests/cli/test_cli_limits", "CliLimits.DumpNames*"),
    ("dump-failure-hides-the-saved-run", "app/commands_run.cpp",
     "      dumpError = e.what();\n", "      throw;\n",
     "test_cli_limits", "tests/cli/test_cli_limits", "CliLimits.ADumpThatFails*"),
    ("sigxfsz-not-ignored", "app/main.cpp",
     "  std::signal(SIGXFSZ, SIG_IGN);\n", "",
     "test_store_cli", "tests/store/test_store_cli", "StoreCliOutputs.TheFileSize*"),
    ("store-efbig-not-a-full-disk", "core/store/sqlite_statement.cpp",
     "return err == ENOSPC || err == EFBIG || err == EDQUOT ?", "return err == ENOSPC ?",
     "test_store_files", "tests/store/test_store_files", "StoreFullDisk.*"),
    ("cli-c1-controls-not-escaped", "app/cli_table.cpp",
     "    } else if (c == 0xc2 && i + 1 < text.size()", "    } else if (false && c == 0xc2 && i + 1 < text.size()",
     "test_cli_escapes", "tests/cli/test_cli_escapes", "*"),
    ("cli-del-not-escaped", "app/cli_table.cpp",
     "if (c < 0x20 || c == 0x7f) {", "if (c < 0x20) {",
     "test_cli_escapes", "tests/cli/test_cli_escapes", "*"),
    ("store-synchronous-normal", "core/store/store_open.cpp",
     "PRAGMA synchronous = FULL;", "PRAGMA synchronous = NORMAL;",
     "test_store_files", "tests/store/test_store_files", "*"),
    ("csv-seq-kv-unresolved", "core/spec/spec_fields.cpp",
     "  r.seq_kv = s.seqKv();",
     "  r.seq_kv = s.seq_kv;",
     "test_spec_field_table", "tests/cli/test_spec_field_table", "*"),
    ("csv-backend-device-swapped", "core/export/results_export.cpp",
     "{std::to_string(r.id), r.backend, r.device,", "{std::to_string(r.id), r.device, r.backend,",
     "test_csv_cells", "tests/store/test_csv_cells", "*"),
    ("csv-cell-dropped", "core/export/results_export.cpp",
     "                           r.message})", "                           })",
     "test_csv_cells", "tests/store/test_csv_cells", "*"),
    # Train passes (issue 12): the gradient check, the train files, the sweep's phase table.
    ("grad-check-dk-ignored", "core/check/reference_grad.cpp",
     "for (const ErrorTally* t : {&dq, &dk, &dv}) {", "for (const ErrorTally* t : {&dq, &dv}) {",
     "test_cpu_train", "tests/cpu/test_cpu_train", "*AWrongGradientFails*"),
    # The sampled accuracy check's promises (issue 18): each rule dropped, its case passes silently.
    ("check-sample-no-query-blocks", "core/check/check_sample.cpp",
     "void CheckSample::everyBlock() {\n", "void CheckSample::everyBlock() {\n  return;\n",
     "test_check_sampling", "tests/cpu/test_check_sampling", "*Last*"),
    ("check-sample-no-mask-edges", "core/check/reference.cpp",
     "  cs.inEveryGroup(maskEdges(s, false));\n", "",
     "test_check_sampling", "tests/cpu/test_check_sampling", "*MaskEdge*"),
    ("check-sample-no-norm-rows", "core/check/reference.cpp",
     "  if (in.q.elements() != s.qElements()) return;\n  const std::vector<double> q",
     "  return;\n  const std::vector<double> q",
     "test_check_sampling", "tests/cpu/test_check_sampling", "*HugeQRow*:*2e5*"),
    ("check-sample-no-rows-at-risk", "core/check/reference.cpp", "      cs.add(r);\n", "      (void)r;\n",
     "test_check_sampling", "tests/cpu/test_check_sampling", "*2e5*"),
    ("check-nan-scan-disabled", "core/check/reference_kernels.cpp",
     "    if (!std::isfinite(values[i])) return static_cast<int64_t>(i);", "    (void)i;",
     "test_check_sampling", "tests/cpu/test_check_sampling", "*Nan*"),
    ("train-inputs-g-not-read", "core/inputs/run_files.cpp",
     "if (s.pass == Pass::train) in.g = tensor(\"g.npy\", {", "if (false) in.g = tensor(\"g.npy\", {",
     "test_cli", "tests/cli/test_cli", "*TrainDump*"),
    ("train-dump-dk-not-written", "core/inputs/run_files.cpp",
     '    writeFloats("dk.npy", gradients->dk, kvShape);\n', "",
     "test_cli", "tests/cli/test_cli", "*TrainDump*"),
    ("phase-matrix-nested-columns", "core/trace/phase_summary.cpp",
     "if (s.depth == 0 && column.emplace(s.name, m.names.size()).second)", "if (column.emplace(s.name, m.names.size()).second)",
     "test_phase_summary", "tests/core/test_phase_summary", "*Matrix*"),
    # The torch layer (needs ATTNSCOPE_TEST_PYTHON set to a Python with torch, or the test skips).
    ("torch-layer-k-v-swapped", "python/attnscope_torch_layer.py",
     "q, k, v = qkv.split([hd, kvd, kvd], dim=-1)", "q, v, k = qkv.split([hd, kvd, kvd], dim=-1)",
     "test_torch_layer", "tests/torch/test_torch_layer", "*"),
    # Issue 18, the database: locks, held files, reading that never writes, check as strict as the readers.
    ("sqlite-locks-posix-again", "core/store/sqlite_file_guard.cpp",
     "  if (ofd == 0 || !ofd_locks.load(std::memory_order_relaxed)) return real_fcntl(fd, cmd, arg);",
     "  if (true) return real_fcntl(fd, cmd, arg);",
     "test_store_sharing", "tests/store/test_store_sharing", "StoreLocks.*"),
    ("sqlite-lock-description-closed-with-any-descriptor", "core/store/sqlite_file_guard.cpp",
     "if (inode != t.inodes.end() && --inode->second.sqlite_descriptors <= 0) {",
     "if (inode != t.inodes.end() && (--inode->second.sqlite_descriptors, true)) {",
     "test_store_sharing", "tests/store/test_store_sharing", "StoreLocks.*"),
    ("held-file-check-disabled", "core/store/sqlite_file_guard.cpp",
     "  if (!real_open) return std::nullopt;\n  const std::string names[]",
     "  return std::nullopt;\n  const std::string names[]",
     "test_store_sharing", "tests/store/test_store_sharing", "StoreLocks.*"),
    ("stale-writer-checkpoints-on-close", "core/store/sqlite_connection.cpp",
     "  if (db_ && heldFileProblem()) sqlite3_db_config", "  if (false) sqlite3_db_config",
     "test_store_sharing", "tests/store/test_store_sharing", "StoreLocks.*"),
    ("reader-checkpoints-a-dead-writers-wal", "core/store/store_open.cpp",
     "      if (journal_with_frames) sqlite3_db_config", "      if (false) sqlite3_db_config",
     "test_store_files", "tests/store/test_store_files", "StoreReading.*"),
    ("check-skips-run-rows", "core/store/store_open.cpp",
     "    impl_->runRowProblems(problems);\n", "",
     "test_store_files", "tests/store/test_store_files", "StoreCheck.*"),
    ("check-empty-file-ok", "core/store/store_open.cpp",
     "    if (impl_->version == 0 && sizeOf(impl_->path) == 0)", "    if (false)",
     "test_store_files", "tests/store/test_store_files", "StoreCheck.*"),
    ("home-unset-password-database-ignored", "core/store/store.cpp",
     "  else if (std::string home = passwordDatabaseHome(); !home.empty())",
     "  else if (std::string home; false)",
     "test_store", "tests/store/test_store", "Store.DefaultDatabasePath"),
    # Issue 18, the command line: exit status, names, compare, size limits.
    ("sweep-exit-0-when-points-are-wrong", "app/cli_results.cpp",
     "  if (wrong + error == 0) return 0;", "  if (error == 0) return 0;",
     "test_cli", "tests/cli/test_cli", "*SweepExitStatus*"),
    ("sweep-name-unbounded", "core/spec/sweep_spec.cpp",
     "  if (name.size() > kMaxSweepNameBytes)", "  if (false)",
     "test_recorded_sweep", "tests/core/test_recorded_sweep", "*"),
    ("compare-lists-no-differing-field", "core/export/sweep_compare.cpp",
     'if (f != "seed" && ja.value(f, nlohmann::json()) != jb.value(f, nlohmann::json())) out.push_back(f);',
     'if (false) out.push_back(f);',
     "test_cli", "tests/cli/test_cli", "*Compare*"),
    ("size-limit-maximum-one-short", "core/spec/workload_spec.cpp",
     "(t.elements(s) <= kMaxTensorElements ? lo : hi) = mid;", "(t.elements(s) < kMaxTensorElements ? lo : hi) = mid;",
     "test_workload_spec", "tests/core/test_workload_spec", "*"),
    # Issue 19 #1: the one sweep-saving path.
    ("recorded-sweep-final-state-not-saved", "core/engine/recorded_sweep.cpp",
     "  store_.setSweepState(result_.sweep_id, state);", "  (void)state;",
     "test_recorded_sweep", "tests/core/test_recorded_sweep", "*"),
    # Last round's code: the layer, train plans, explain's rules and memory, phase tables, the field table.
    ("layer-check-dw-o-ignored", "core/check/reference_layer.cpp",
     "for (const ErrorTally* t : {&dO, &dwo, &dbo}) fold(a, *t, problem);",
     "for (const ErrorTally* t : {&dO, &dbo}) fold(a, *t, problem);",
     "test_cpu_layer", "tests/cpu/test_cpu_layer", "CpuLayerCheck.*"),
    ("layer-dx-not-scanned-for-nan", "core/check/reference_layer.cpp",
     '{{&grads->dx, "dx"}, {&grads->dw_qkv, "dw_qkv"},', '{{&grads->dw_qkv, "dw_qkv"},',
     "test_check_sampling", "tests/cpu/test_check_sampling", "*LayersGradient*"),
    ("train-plan-ds-8-bytes-short", "kernels/cpu/cpu_reference_backward.cpp",
     'p.add("dS = P * (dP - delta)", s.scoreElements() * 4,', 'p.add("dS = P * (dP - delta)", s.scoreElements() * 4 - 8,',
     "test_plan_buffers", "tests/cpu/test_plan_buffers", "*"),
    ("explain-cpu-flash-rejects-masks-in-2.4", "core/torch_dispatch/sdpa_rules_cpu.cpp",
     '{"cpu_flash.attn_mask", F, cpu, between(1, 3),', '{"cpu_flash.attn_mask", F, cpu, between(1, 4),',
     "test_explain_rules", "tests/torch_dispatch/test_explain_rules", "*"),
    ("explain-cpu-flash-lse-halved", "core/torch_dispatch/sdpa_memory.cpp",
     'p.alloc("logsumexp fp32 [B,L,H]", z.B * z.L * z.Hq * 4,', 'p.alloc("logsumexp fp32 [B,L,H]", z.B * z.L * z.Hq * 2,',
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*"),
    ("explain-flash-pads-head-dim-to-16", "core/torch_dispatch/sdpa_memory.cpp",
     "if (v >= V(2) && (z.D % 8 != 0 || z.Dv % 8 != 0)) {", "if (v >= V(2) && (z.D % 16 != 0 || z.Dv % 16 != 0)) {",
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*"),
    ("phase-share-counts-nested-phases", "core/trace/phase_summary.cpp",
     "    if (s.depth == 0) top += s.total_ns;", "    top += s.total_ns;",
     "test_phase_summary", "tests/core/test_phase_summary", "*"),
    ("field-mask-keep-prob-not-loaded", "core/spec/spec_fields.cpp",
     "                 s.mask.keep_prob = realOf(v[2]);\n", "",
     "test_spec_field_table", "tests/cli/test_spec_field_table", "*"),
    # The CPU task pool goes on after a task's error (its test once depended on the scheduler).
    ("task-pool-ignores-stop", "kernels/cpu/task_pool.cpp",
     "    while (!job.stop.load(std::memory_order_relaxed)) {", "    while (true) {",
     "test_cpu_runtime", "tests/cpu/test_cpu_runtime", "TaskPool.*"),
    # Issue 19: the core's tiers. An include that goes up a tier; a file outside every tier.
    ("include-goes-up-a-tier", "core/spec/dtype.h",
     '#include <string_view>\n', '#include <string_view>\n#include "core/store/store_error.h"\n',
     "test_include_tiers", "tests/core/test_include_tiers", "*"),
    ("source-not-in-its-tier", "core/CMakeLists.txt",
     "attnscope_core_tier(files SOURCES output_file.cpp output_interrupt.cpp)",
     "attnscope_core_tier(files SOURCES output_file.cpp)\ntarget_sources(attnscope_core_files PRIVATE files/output_interrupt.cpp)",
     "test_include_tiers", "tests/core/test_include_tiers", "*"),
    # The torch worker (needs ATTNSCOPE_TEST_PYTHON): an idle worker trusted without asking it.
    ("torch-idle-worker-not-asked", "kernels/torch/torch_backend.cpp",
     "worker_->python().path == python.path && worker_->answers(cancel)) return worker_;",
     "worker_->python().path == python.path && worker_->alive()) return worker_;",
     "test_torch_backends", "tests/torch/test_torch_backends", "*Idle*"),
    # attnscope record (issue 29): each promise broken once.
    ("record-mismatch-hidden", "core/record/recording_explain.cpp",
     "out.mismatch = recorded_env && !ran.empty() && c.raised.empty() && ran != out.predicted;", "out.mismatch = false;",
     "test_recording", "tests/record/test_recording", "RecordedExplain.*"),
    ("record-per-head-mask-as-broadcast", "core/record/recording_explain.cpp",
     "s.mask_layout = per_head ? MaskLayout::per_head : MaskLayout::broadcast;", "s.mask_layout = MaskLayout::broadcast;",
     "test_recording", "tests/record/test_recording", "RecordedWorkload.*"),
    ("record-signal-not-forwarded", "core/record/program_run.cpp",
     "if (child > 0 && info && info->si_code <= 0) ::kill(child, sig);", "if (child > 0 && info && info->si_code > 0) ::kill(child, sig);",
     "test_recording", "tests/record/test_recording", "ProgramRun.*"),
    ("record-calls-not-saved", "core/store/store_recordings.cpp",
     "for (const RecordedCall& call : rec.calls) {", "for (const RecordedCall& call : std::vector<RecordedCall>{}) {",
     "test_recording", "tests/record/test_recording", "RecordingStore.*"),
    ("record-padding-mask-called-causal", "core/record/recording_explain.cpp",
     "  if (row_mask)\n", "  if (false)\n",
     "test_recording", "tests/record/test_recording", "RecordedWorkload.*"),
    ("record-stderr-not-kept", "core/record/program_run.cpp",
     "          tail.append(buf, static_cast<size_t>(n));\n", "",
     "test_recording", "tests/record/test_recording", "ProgramRun.*"),
    # Additive (float) masks and head_dim up to 512 (issue 20 #3).
    ("reference-additive-bias-ignored", "core/check/reference.cpp",
     "scores[j] = scores[j] * scale + bias;", "scores[j] = scores[j] * scale;",
     "test_additive_mask", "tests/core/test_additive_mask", "*Naive*"),
    ("reference-grad-additive-bias-ignored", "core/check/reference_grad.cpp",
     "sc[j] = sc[j] * scale_ + bias(i, j);", "sc[j] = sc[j] * scale_;",
     "test_cpu_train", "tests/cpu/test_cpu_train", "*"),
    ("flash-additive-bias-in-natural-units", "kernels/cpu/cpu_flash_backend.cpp",
     ": std::numbers::log2e_v<float>;\n", ": 1.0f;\n",
     "test_cpu_accuracy", "tests/cpu/test_cpu_accuracy", "*additive*"),
    ("flash-backward-additive-bias-dropped", "kernels/cpu/cpu_flash_backward.cpp",
     "      if (additive)\n        addToFloat(", "      if (false)\n        addToFloat(",
     "test_cpu_train", "tests/cpu/test_cpu_train", "*"),
    ("mask-dtype-any-float-accepted", "core/spec/workload_spec.cpp",
     "} else if (s.mask_dtype && *s.mask_dtype != DType::fp32 && *s.mask_dtype != s.dtype) {",
     "} else if (false) {",
     "test_additive_mask", "tests/core/test_additive_mask", "*MaskDType*"),
    ("additive-mask-bytes-as-bool", "core/spec/workload_spec.cpp",
     "(mask.kind == MaskKind::additive ? bytesPerElement(maskDType()) : 1)", "1",
     "test_additive_mask", "tests/core/test_additive_mask", "*Bytes*"),
    # Issue 20: the lines measured per release (each killed by a test_explain_memory case).
    ("explain-lower-right-mask-kept-for-backward", "core/torch_dispatch/sdpa_memory.cpp",
     "if (lower_right_mask < m.plan.buffers.size() && m.hasBackward())",
     "if (false && lower_right_mask < m.plan.buffers.size() && m.hasBackward())",
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*LowerRight*"),
    ("explain-grad-output-copied-at-seq-1", "core/torch_dispatch/sdpa_memory.cpp",
     "if (t.version >= V(5) && z.Hq > 1 && z.L > 1)", "if (t.version >= V(5))",
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*GradOutput*"),
    ("explain-fp32-mask-refused-one-release-longer", "core/torch_dispatch/sdpa_explain.cpp",
     "call.mask_dtype != call.dtype && t.version < TorchVersion{2, 4, 0}",
     "call.mask_dtype != call.dtype && t.version < TorchVersion{2, 5, 0}",
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*Additive*"),
    ("explain-2.3-flash-mask-copy-dropped", "core/torch_dispatch/sdpa_memory.cpp",
     "t.version >= V(3) && t.version < V(4);", "t.version >= V(3) && t.version < V(3);",
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*"),
    ("explain-float-mask-converted-like-bool", "core/torch_dispatch/sdpa_memory.cpp",
     'if (has_mask && !call.hasFloatMask()) dying.push_back(convertMask(mask_numel, z.e, call.dtype, "bool mask"));',
     'if (has_mask) dying.push_back(convertMask(mask_numel, z.e, call.dtype, "bool mask"));',
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*"),
    ("explain-2.0-cpu-honours-forced-flash", "core/torch_dispatch/sdpa_explain.cpp",
     "target.version < TorchVersion{2, 1, 0} && kernel != SdpaKernel::math",
     "target.version < TorchVersion{2, 0, 0} && kernel != SdpaKernel::math",
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*ForcedKernel*"),
    ("explain-padding-suggested-twice", "core/torch_dispatch/sdpa_explain.cpp",
     "&& (a == 8 || roundUp(d, 4) != roundUp(d, 8)))", ")",
     "test_explain_rules", "tests/torch_dispatch/test_explain_rules", "*Suggestions*"),
    ("explain-half-scores-fp32-mask-add-free", "core/torch_dispatch/sdpa_memory.cpp",
     'p.transient("add_ result fp32", z.N() * 4);', 'p.transient("add_ result fp32", 0);',
     "test_explain_memory", "tests/torch_dispatch/test_explain_memory", "*"),
]


def run(cmd, cwd, timeout=None):
    try:
        return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "timed out")


def check(build, mutant):
    name, rel, old, new, target, exe, gfilter = mutant
    path = ROOT / rel
    original = path.read_text()
    if original.count(old) != 1:
        return "stale (the code it mutates changed; update the mutant)"
    try:
        path.write_text(original.replace(old, new))
        b = run(["cmake", "--build", str(build), "-j2", "--target", target], ROOT)
        if b.returncode != 0:
            return "did not build: " + b.stdout.strip().splitlines()[-1]
        t = run([str(build / exe), "--gtest_filter=" + gfilter], ROOT, timeout=600)
        if t.returncode == 124:
            return "killed (the test hung; stopped after 600 s)"
        return "killed" if t.returncode != 0 else "SURVIVED"
    finally:
        path.write_text(original)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = pathlib.Path(sys.argv[1]).resolve()
    wanted = set(sys.argv[2:])
    failed = False
    for m in MUTANTS:
        if wanted and m[0] not in wanted:
            continue
        outcome = check(build, m)
        failed |= not outcome.startswith("killed")
        print(f"{m[0]:36} {m[4]:22} {outcome}", flush=True)
    # Leave the build matching the restored sources.
    run(["cmake", "--build", str(build), "-j2", "--target", *sorted({m[4] for m in MUTANTS if not wanted or m[0] in wanted})], ROOT)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
