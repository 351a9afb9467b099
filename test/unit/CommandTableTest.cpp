//===- CommandTableTest.cpp - The driver's table of commands --------------===//
//
// Every row of the command table (tools/tpcc/Commands.h) has a name and a bit
// of its own, the entry points its inputs call for and its lines in
// `tpcc --help`; the parser finds each command by name and hands it what its
// inputs say; the flags name only commands of the table.
//
//===----------------------------------------------------------------------===//
#include "tools/tpcc/Commands.h"
#include "tools/tpcc/Options.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <set>

using namespace tpcc::driver;

namespace {
/// What parseCommandLine returns and prints on stdout and stderr for `args`.
struct Parsed {
  std::optional<int> exit;
  std::string out, err;
};
Parsed parse(const std::vector<std::string> &args, Options &o) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Parsed p;
  p.exit = parseCommandLine(args, o);
  llvm::outs().flush();
  llvm::errs().flush();
  p.out = testing::internal::GetCapturedStdout();
  p.err = testing::internal::GetCapturedStderr();
  return p;
}
} // namespace

TEST(CommandTable, NamesAndBitsAreTheirOwn) {
  std::set<std::string> names;
  unsigned bits = 0;
  for (const CommandInfo &c : commandTable()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " is in the table twice";
    EXPECT_TRUE(c.command != 0 && (c.command & (c.command - 1)) == 0) << c.name << ": one bit";
    EXPECT_EQ(bits & c.command, 0u) << c.name << " shares its bit";
    bits |= c.command;
    EXPECT_EQ(findCommand(c.name), &c);
    EXPECT_EQ(&commandInfo(c.command), &c);
  }
  EXPECT_EQ(bits, allCommands());
  EXPECT_EQ(findCommand("frobnicate"), nullptr);
  EXPECT_EQ(findCommand(""), nullptr);
}

TEST(CommandTable, EveryCommandCanBeChecked) {
  for (const CommandInfo &c : commandTable()) {
    EXPECT_NE(c.check, nullptr) << c.name;
    // One way to run: after its specs compiled, or without specs.
    EXPECT_EQ(c.runCompiled != nullptr, c.compilesSpecs()) << c.name;
    EXPECT_EQ(c.run != nullptr, !c.compilesSpecs()) << c.name;
    EXPECT_EQ((specCommands() & c.command) != 0, c.compilesSpecs()) << c.name;
  }
}

TEST(CommandTable, EveryCommandHasUsageLinesInOrder) {
  const std::string &usage = mainUsage();
  size_t last = 0;
  for (const CommandInfo &c : commandTable()) {
    llvm::StringRef lines(c.usage);
    EXPECT_TRUE(lines.startswith(std::string("  tpcc ") + c.name + " ")) << c.name;
    EXPECT_TRUE(lines.endswith("\n")) << c.name;
    size_t at = usage.find(c.usage);
    ASSERT_NE(at, std::string::npos) << c.name;
    EXPECT_GT(at, last) << c.name << " is out of the table's order";
    last = at;
  }
  EXPECT_LT(last, usage.find("  tpcc --help | --version\n"));
}

TEST(CommandTable, HelpPrintsTheCommandsText) {
  for (const CommandInfo &c : commandTable()) {
    Options o;
    Parsed p = parse({c.name, "--help"}, o);
    EXPECT_EQ(p.exit, std::optional<int>(ExitOK)) << c.name;
    EXPECT_EQ(o.command, c.command) << c.name;
    EXPECT_EQ(p.out, c.help ? std::string(c.help) : mainUsage()) << c.name;
  }
}

TEST(CommandTable, ArgumentsGoWhereTheInputsSay) {
  for (const CommandInfo &c : commandTable()) {
    // The command's own checks may refuse the rest (no -o, no data):
    // the arguments are placed before them.
    Options o;
    Parsed p = parse({c.name, "a.tpc", "m.onnx"}, o);
    EXPECT_EQ(o.command, c.command) << c.name;
    EXPECT_EQ(o.commandName, c.name);
    switch (c.inputs) {
    case Inputs::Specs:
      EXPECT_EQ(o.inputs, (std::vector<std::string>{"a.tpc", "m.onnx"})) << c.name;
      EXPECT_EQ(o.model, "") << c.name;
      break;
    case Inputs::NameAndSpecs:
      EXPECT_EQ(o.name, "a.tpc") << c.name;
      EXPECT_EQ(o.inputs, (std::vector<std::string>{"m.onnx"})) << c.name;
      break;
    case Inputs::SpecsAndModel:
      EXPECT_EQ(o.inputs, (std::vector<std::string>{"a.tpc"})) << c.name;
      EXPECT_EQ(o.model, "m.onnx") << c.name;
      break;
    case Inputs::Model:
      EXPECT_EQ(p.exit, std::optional<int>(ExitUsage)) << c.name;
      EXPECT_NE(p.err.find(std::string(c.name) + " takes one model; found `a.tpc` and `m.onnx`"),
                std::string::npos)
          << c.name << ": " << p.err;
      EXPECT_TRUE(o.inputs.empty()) << c.name;
      break;
    }
  }
}

TEST(CommandTable, UnknownCommandListsEveryCommand) {
  Options o;
  Parsed p = parse({"frobnicate"}, o);
  EXPECT_EQ(p.exit, std::optional<int>(ExitUsage));
  EXPECT_NE(p.err.find("unknown command `frobnicate`; expected " + commandChoices()),
            std::string::npos)
      << p.err;
  for (const CommandInfo &c : commandTable())
    EXPECT_NE(commandChoices().find(std::string("`") + c.name + "`"), std::string::npos) << c.name;
}

TEST(CommandTable, FlagsNameCommandsOfTheTable) {
  for (const Flag &f : flagTable()) {
    EXPECT_NE(f.commands, 0u) << f.name;
    EXPECT_EQ(f.commands & ~allCommands(), 0u) << f.name << " names a command not in the table";
  }
  // In the order of the bits, as the messages have always listed them.
  EXPECT_EQ(commandList(Check), "`tpcc check`");
  EXPECT_EQ(commandList(Plan | Quantize), "`tpcc plan` and `tpcc quantize`");
  EXPECT_EQ(commandList(Eval | Finetune | tpcc::driver::Run),
            "`tpcc run`, `tpcc eval` and `tpcc finetune`");
  Options o;
  Parsed p = parse({"check", "--explain", "n", "a.tpc"}, o);
  EXPECT_EQ(p.exit, std::optional<int>(ExitUsage));
  EXPECT_NE(p.err.find("--explain works with `tpcc plan`\n"), std::string::npos) << p.err;
}
