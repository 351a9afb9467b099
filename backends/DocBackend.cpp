//===- DocBackend.cpp - A readable description of one platform ------------===//
//
// `tpcc doc NAME [--format=markdown|html]`: a platform as tables for people —
// header (name, version, type, parent, flags, declared memory), the default options, each
// opset with its options (every candidate: activation method / bits /
// signedness, input bits, kernel and bias method / bits / per-channel, simd,
// preserving, fixed parameters; the base one marked), the fusing patterns,
// and the ONNX ops each opset binds in every capabilities on the platform
// (predicates shown).
//
// The content is written once, against a small `Renderer` interface
// (heading, paragraph, table, list); MarkdownRenderer and HtmlRenderer spell
// it. Text may hold `code` spans in backticks: Markdown keeps them, HTML
// turns them into <code> after escaping. The HTML is one standalone page
// with inline CSS.
//
//===----------------------------------------------------------------------===//
#include "backends/Backends.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <memory>

using namespace tpcc;

namespace {

using Row = std::vector<std::string>;

class Renderer {
public:
  virtual ~Renderer() = default;
  virtual void begin(llvm::StringRef title) = 0;
  virtual void end() = 0;
  virtual void heading(int level, llvm::StringRef text) = 0;
  virtual void paragraph(llvm::StringRef text) = 0;
  virtual void table(const Row &header, const std::vector<Row> &rows) = 0;
  virtual void list(const std::vector<std::string> &items) = 0;
};

class MarkdownRenderer : public Renderer {
public:
  explicit MarkdownRenderer(llvm::raw_ostream &os) : os(os) {}
  void begin(llvm::StringRef) override {}
  void end() override {}
  void heading(int level, llvm::StringRef text) override {
    os << std::string(level, '#') << ' ' << text << "\n\n";
  }
  void paragraph(llvm::StringRef text) override { os << text << "\n\n"; }
  void table(const Row &header, const std::vector<Row> &rows) override {
    auto row = [&](const Row &r) {
      os << '|';
      for (const std::string &cell : r)
        os << ' ' << cell_(cell) << " |";
      os << '\n';
    };
    row(header);
    os << '|';
    for (size_t i = 0; i < header.size(); ++i)
      os << "---|";
    os << '\n';
    for (const Row &r : rows)
      row(r);
    os << '\n';
  }
  void list(const std::vector<std::string> &items) override {
    for (const std::string &i : items)
      os << "- " << i << '\n';
    os << '\n';
  }

private:
  /// A table cell: `|` escaped, never empty.
  static std::string cell_(llvm::StringRef s) {
    if (s.empty())
      return " ";
    std::string out;
    for (char c : s) {
      if (c == '|')
        out += '\\';
      out += c;
    }
    return out;
  }
  llvm::raw_ostream &os;
};

class HtmlRenderer : public Renderer {
public:
  explicit HtmlRenderer(llvm::raw_ostream &os) : os(os) {}
  void begin(llvm::StringRef title) override {
    os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>" << escape(title) << "</title>\n<style>\n"
       << "body { font-family: system-ui, sans-serif; margin: 2em auto; "
          "max-width: 72em; padding: 0 1em; color: #222; }\n"
       << "table { border-collapse: collapse; margin: 0.5em 0 1.5em; }\n"
       << "th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; "
          "text-align: left; vertical-align: top; }\n"
       << "th { background: #eee; }\n"
       << "code { background: #f4f4f4; padding: 0 0.2em; }\n"
       << "h2 { border-bottom: 1px solid #ccc; }\n"
       << "</style>\n</head>\n<body>\n";
  }
  void end() override { os << "</body>\n</html>\n"; }
  void heading(int level, llvm::StringRef text) override {
    os << "<h" << level << '>' << inline_(text) << "</h" << level << ">\n";
  }
  void paragraph(llvm::StringRef text) override { os << "<p>" << inline_(text) << "</p>\n"; }
  void table(const Row &header, const std::vector<Row> &rows) override {
    os << "<table>\n<thead><tr>";
    for (const std::string &h : header)
      os << "<th>" << inline_(h) << "</th>";
    os << "</tr></thead>\n<tbody>\n";
    for (const Row &r : rows) {
      os << "<tr>";
      for (const std::string &cell : r)
        os << "<td>" << inline_(cell) << "</td>";
      os << "</tr>\n";
    }
    os << "</tbody>\n</table>\n";
  }
  void list(const std::vector<std::string> &items) override {
    os << "<ul>\n";
    for (const std::string &i : items)
      os << "<li>" << inline_(i) << "</li>\n";
    os << "</ul>\n";
  }

private:
  static std::string escape(llvm::StringRef s) {
    std::string out;
    for (char c : s) {
      switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
      }
    }
    return out;
  }
  /// Escapes, and turns `x` into <code>x</code>.
  static std::string inline_(llvm::StringRef s) {
    std::string out;
    bool code = false;
    llvm::SmallVector<llvm::StringRef, 8> parts;
    s.split(parts, '`');
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) {
        out += code ? "</code>" : "<code>";
        code = !code;
      }
      out += escape(parts[i]);
    }
    if (code)
      out += "</code>";
    return out;
  }
  llvm::raw_ostream &os;
};

std::string code(llvm::StringRef s) { return "`" + s.str() + "`"; }

std::string numberText(double d) {
  ir::Literal lit;
  lit.kind = ir::Literal::Kind::Float;
  lit.f = d;
  return lit.str();
}

std::string attrText(const ir::AttrConfig &a) {
  if (!a.quantize)
    return "off";
  std::string s = std::string(ir::toString(a.method)) + " " + std::to_string(a.bits) + "-bit " +
                  (a.perChannel ? "per-channel" : "per-tensor");
  if (a.lutBits)
    s += " (LUT values " + std::to_string(*a.lutBits) + "-bit)";
  if (!a.format.plain())
    s += ": " + ir::formatText(a.format, a.bits);
  return s;
}

std::string activationText(const ir::ActivationConfig &a) {
  if (!a.quantize)
    return "off";
  std::string s = std::string(ir::toString(a.method)) + " " + std::to_string(a.bits) + "-bit " +
                  ir::toString(a.signedness);
  if (!a.format.plain())
    s += ": " + ir::formatText(a.format, a.bits);
  return s;
}

std::string fixedText(const ir::OpConfig &c) {
  std::vector<std::string> parts;
  if (c.fixedScale)
    parts.push_back("scale " + numberText(*c.fixedScale));
  if (c.fixedZeroPoint)
    parts.push_back("zero point " + std::to_string(*c.fixedZeroPoint));
  return parts.empty() ? "—" : llvm::join(parts, ", ");
}

void optionsTable(Renderer &r, const ir::Options &o) {
  Row header = {"",     "config",        "activation", "input bits", "kernel",
                "bias", "other weights", "simd",       "preserving", "fixed params"};
  std::vector<Row> rows;
  for (size_t i = 0; i < o.configs.size(); ++i) {
    const ir::OpConfig &c = o.configs[i];
    std::vector<std::string> inputs;
    for (int b : c.inputBits)
      inputs.push_back(std::to_string(b));
    rows.push_back({i == o.base ? "base" : "", c.name.empty() ? "(inline)" : code(c.name),
                    activationText(c.activation), llvm::join(inputs, ", "),
                    attrText(c.weightConfig("kernel")), attrText(c.weightConfig("bias")),
                    attrText(c.weights), c.simd ? std::to_string(*c.simd) : "none",
                    c.preserving ? "yes" : "no", fixedText(c)});
  }
  r.table(header, rows);
}

std::string elementText(const std::vector<std::string> &e) {
  std::vector<std::string> names;
  for (const std::string &n : e)
    names.push_back(code(n));
  std::string s = llvm::join(names, " | ");
  return e.size() > 1 ? "(" + s + ")" : s;
}

/// "8 MiB", "12.5 MB", "1234567 B": an amount of memory, exactly, in the
/// shortest of binary units, decimal units (up to two decimals) or bytes.
std::string bytesText(double bytes) {
  std::string s = ir::formatBytes(bytes);
  std::string error;
  std::optional<ir::Budget> back = ir::parseBudget(s, ir::Resource::WeightsMemory, error);
  if (back && back->value == bytes)
    return s;
  for (auto [unit, factor] :
       {std::pair<const char *, double>{"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}}) {
    if (bytes < factor || std::fmod(bytes, factor / 100) != 0)
      continue;
    std::string v = fmt::format("{:.2f}", bytes / factor);
    while (v.back() == '0')
      v.pop_back();
    if (v.back() == '.')
      v.pop_back();
    return v + " " + unit;
  }
  return std::to_string(static_cast<int64_t>(bytes)) + " B";
}

void document(Renderer &r, const ir::Module &m, const ir::Platform &p) {
  r.begin("Platform " + p.name);
  r.heading(1, "Platform " + code(p.name));
  std::vector<Row> properties = {
      {"version",
       p.version ? std::to_string(p.version->minor) + "." + std::to_string(p.version->patch) : "—"},
      {"type", p.type},
      {"parent", p.parent ? code(*p.parent) : "—"},
      {"SIMD padding", p.simdPadding ? "yes" : "no"},
      {"metadata", p.metadata ? "yes" : "no"},
      {"insert_preserving_quantizers", p.insertPreservingQuantizers ? "yes" : "no"},
      {"default recipe", p.recipe ? code(*p.recipe) : "— (the language's defaults)"}};
  if (p.resources)
    properties.push_back({"memory", interop::resourcesText(*p.resources)});
  r.table({"property", "value"}, properties);

  r.heading(2, "Default options");
  r.paragraph("Operators of config-less opsets, and operators no opset "
              "names, use these.");
  optionsTable(r, p.defaultOptions);

  std::vector<const ir::Capabilities *> caps;
  for (const ir::Capabilities &c : m.capabilities)
    if (c.platform == p.name)
      caps.push_back(&c);

  r.heading(2, "Operator sets");
  if (p.opsets.empty())
    r.paragraph("None.");
  for (const ir::Opset &o : p.opsets) {
    r.heading(3, code(o.name));
    if (o.options)
      optionsTable(r, *o.options);
    else
      r.paragraph("Config-less: uses the default options.");
    std::vector<std::string> bound;
    for (const ir::Capabilities *c : caps) {
      std::vector<std::string> ops;
      for (const ir::OpBinding &b : c->bindings)
        if (b.opset == o.name)
          ops.push_back(code(b.op) + (b.where ? " where " + code(b.where->str()) : ""));
      if (!ops.empty())
        bound.push_back("ONNX ops in " + code(c->name) + ": " + llvm::join(ops, ", "));
      else if (llvm::is_contained(c->unbound, o.name))
        bound.push_back(code(c->name) + ": none (no ONNX op realises it)");
    }
    if (caps.empty())
      continue;
    if (bound.empty())
      r.paragraph("Not bound to any ONNX op.");
    else
      r.list(bound);
  }

  r.heading(2, "Fusing patterns");
  if (p.fusings.empty()) {
    r.paragraph("None.");
  } else {
    std::vector<Row> rows;
    for (const ir::Fusing &f : p.fusings) {
      std::vector<std::string> elems;
      for (const auto &e : f.pattern)
        elems.push_back(elementText(e));
      // The `with` config: how the outputs inside the chain are quantized.
      std::string inside = "not quantized";
      if (f.config && f.config->activation.quantize)
        inside = (f.config->name.empty() ? "" : code(f.config->name) + ": ") +
                 activationText(f.config->activation);
      rows.push_back({f.name.empty() ? "—" : code(f.name), llvm::join(elems, " → "), inside});
    }
    r.table({"name", "pattern", "inside"}, rows);
  }

  r.heading(2, "Capabilities");
  if (caps.empty()) {
    r.paragraph("No capabilities binds this platform to a framework.");
  } else {
    std::vector<std::string> items;
    for (const ir::Capabilities *c : caps)
      items.push_back(code(c->name) + " on framework " + code(c->framework) + ": " +
                      std::to_string(c->bindings.size()) + " bindings");
    r.list(items);
  }
  r.end();
}

} // namespace

std::string interop::resourcesText(const ir::PlatformResources &res) {
  std::vector<std::string> parts;
  auto add = [&](const char *what, const std::optional<ir::Budget> &b) {
    if (b)
      parts.push_back(std::string(what) + " " + bytesText(b->value));
  };
  add("weights", res.weightsMemory);
  add("activation", res.activationMemory);
  add("total", res.totalMemory);
  return llvm::join(parts, ", ");
}

void tpcc::emitDoc(const ir::Module &m, const ir::Platform &p, DocFormat format,
                   llvm::raw_ostream &os) {
  std::unique_ptr<Renderer> r;
  if (format == DocFormat::HTML)
    r = std::make_unique<HtmlRenderer>(os);
  else
    r = std::make_unique<MarkdownRenderer>(os);
  document(*r, m, p);
}
