#pragma once
// The table of WorkloadSpec fields. One entry says how a field is named, parsed and printed, how
// it appears in JSON, in the CSV export, in the terminal table, in the store's runs table, on the
// command line, in the GUI form and in the texts that describe a spec (summary(), the charts'
// context lines, the torch worker's request). Everything that handles "every field" walks this table: the
// spec parser (setField, toJson/workloadSpecFromJson), the SPEC options of backends/run/sweep/
// explain, sweep axes, results_export's CSV columns, the store's run columns and the Workload
// form. A new field is one entry in spec_fields.cpp plus its member in WorkloadSpec (see
// docs/ARCHITECTURE.md, "Adding a workload field").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/workload_spec.h"

namespace attnscope {

// How the Workload form shows a field.
enum class FieldWidget {
  count,        // an integer spin box from 0; 0 reads as `zero_text` when that is set
  choice,       // a fixed list: `choices`
  open_choice,  // an editable list: `choices` are suggestions, any text the parser takes is allowed
  number_text,  // a line edit; empty means the field's default
};

// One value of a store column: NULL, an integer, a real or a text.
using StoreValue = std::variant<std::monostate, int64_t, double, std::string>;

struct StoreColumn {
  std::string_view name{};
  std::string_view sql{};          // type and constraints as in CREATE TABLE, e.g. "INTEGER NOT NULL"
  int since_schema = 1;          // the store schema version that added the column
  std::string_view sql_default{};  // SQL literal that rows older than since_schema read as
};

struct SpecField {
  std::string_view name{};                  // JSON key, sweep-axis name, setField name
  std::vector<std::string_view> aliases{};  // other names setField takes (the CLI name is one too)
  std::string_view cli{};                   // command-line option without the dashes
  std::string_view metavar{};               // placeholder in --help: N, T, M
  std::string_view help{};                  // the --help line; also the form's tooltip
  std::string_view label{};                 // the form's row label
  FieldWidget widget = FieldWidget::count;
  std::vector<std::string_view> choices{};  // allowed values (choice) or suggestions (open_choice)
  // count: what 0 means, e.g. "same as heads"; choice: a first item that stands for the empty
  // text (the default), e.g. "same as dtype".
  std::string_view zero_text{};
  bool optional_value = false;            // JSON null and empty text mean "the default"
  bool sweepable = true;                  // sweep takes a comma-separated list: --heads 8,16
  std::vector<std::string_view> example{};  // valid values, the first not the default (tests, docs)
  // Other fields set first so that the examples are valid, e.g. {"pass", "train"} for checkpoint.
  std::vector<std::pair<std::string_view, std::string_view>> example_context{};
  std::string_view csv_column{};            // column of the CSV export (the resolved value)
  std::string_view table_header{};          // column of the terminal results table; empty: not shown

  // Sets the field from text as written on the command line; the error names the field and the
  // allowed values. Whitespace is refused before this is called.
  std::optional<SpecError> (*parse)(WorkloadSpec&, std::string_view text) = nullptr;
  // Text that parse reads back to the same value (every digit kept).
  std::string (*format)(const WorkloadSpec&) = nullptr;
  // The JSON value under `name`; read back through parse from its text.
  nlohmann::json (*json)(const WorkloadSpec&) = nullptr;

  // Store columns of the runs table, the values bound to them and how they are read back; load
  // returns what is wrong with a damaged row ("an unknown dtype 'fp8'").
  std::vector<StoreColumn> columns{};
  std::vector<StoreValue> (*store)(const WorkloadSpec&) = nullptr;
  std::optional<std::string> (*load)(WorkloadSpec&, const std::vector<StoreValue>&) = nullptr;

  // The field's piece of summary() ("B1 H8/8 L1024x1024 D64 fp32 none") with its own leading
  // separator, "" to leave it out. nullptr: " name:value" where the value is not the default.
  std::string (*brief)(const WorkloadSpec&) = nullptr;
  // The field in words for the charts' context lines and the report ("heads 8"), "" when there is
  // nothing to say. nullptr: "name value" where the value is not the default.
  std::string (*words)(const WorkloadSpec&) = nullptr;

  // The CSV and terminal-table cell: the value of resolvedSpec(s) ("same as" defaults applied).
  std::string cell(const WorkloadSpec& s) const;
  // brief or words, or their defaults.
  std::string briefText(const WorkloadSpec& s) const;
  std::string wordsText(const WorkloadSpec& s) const;
};

// Every field, in the order of --help, JSON reading, CSV columns and the form.
const std::vector<SpecField>& specFields();
// By name, alias or CLI name; nullptr when unknown.
const SpecField* findSpecField(std::string_view name);

// The spec with every "same as" default applied: kv_heads, seq_kv, head_dim and width (heads x
// head_dim) as computed, and the scale as used. What the CSV cells show and the torch worker reads.
WorkloadSpec resolvedSpec(const WorkloadSpec& s);

// Text helpers shared by the field parsers: the whole text must be the number.
bool parseSpecInt(std::string_view text, int64_t& out);
bool parseSpecDouble(std::string_view text, double& out);
// The shortest text that reads back as the same double.
std::string shortestText(double v);

}  // namespace attnscope
