// Printer and recursive-descent parser of the IR's text form.
#include "compiler/text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "compiler/names.h"

namespace openneuron::compiler {

namespace {

// ---- printing ----

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

class Printer {
 public:
  explicit Printer(std::ostringstream& out) : out_(out) {}

  void graph(const Graph& g, int indent) {
    std::unordered_map<int, int> saved;
    saved.swap(names_);
    const std::string pad(indent, ' ');
    out_ << pad << "graph(";
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      if (k) out_ << ", ";
      define(g, g.inputs[k]);
    }
    out_ << ") {\n";
    for (const Node& node : g.nodes) {
      out_ << pad << "  ";
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        if (k) out_ << ", ";
        define(g, node.outputs[k]);
      }
      out_ << " = " << node.op;
      if (!node.attrs.empty()) {
        out_ << "[";
        bool first = true;
        for (const auto& [name, value] : node.attrs) {
          if (!first) out_ << ", ";
          first = false;
          out_ << name << "=";
          attr(value);
        }
        out_ << "]";
      }
      out_ << "(";
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        if (k) out_ << ", ";
        out_ << ref(node.inputs[k]);
      }
      out_ << ")";
      if (node.body) {
        out_ << " {\n";
        graph(*node.body, indent + 4);
        out_ << pad << "  }";
      }
      out_ << "\n";
    }
    out_ << pad << "  return (";
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      if (k) out_ << ", ";
      out_ << (g.outputs[k] < 0 ? std::string("_") : ref(g.outputs[k]));
    }
    out_ << ")\n" << pad << "}\n";
    names_.swap(saved);
  }

 private:
  std::string ref(int id) const {
    const auto it = names_.find(id);
    return it == names_.end() ? "%?" + std::to_string(id) : "%" + std::to_string(it->second);
  }

  void define(const Graph& g, int id) {
    const int name = static_cast<int>(names_.size());
    names_[id] = name;
    out_ << "%" << name << ": ";
    const Value& v = g.values.at(id);
    switch (v.kind) {
      case ValueKind::Int:
        out_ << "int";
        return;
      case ValueKind::Float:
        out_ << "float";
        return;
      case ValueKind::None:
        out_ << "none";
        return;
      case ValueKind::Tensor:
        break;
    }
    out_ << dtype_short_name(v.dtype) << "[";
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (d) out_ << ", ";
      if (v.shape[d].is_symbolic()) {
        out_ << quoted(v.shape[d].symbol);
      } else {
        out_ << v.shape[d].size;
      }
    }
    out_ << "]";
    bool row_major = true;
    for (size_t d = 0; d < v.dim_order.size(); ++d) {
      if (v.dim_order[d] != static_cast<int>(d)) row_major = false;
    }
    if (!row_major) {
      out_ << "{";
      for (size_t d = 0; d < v.dim_order.size(); ++d) out_ << (d ? ", " : "") << v.dim_order[d];
      out_ << "}";
    }
  }

  void attr(const Attr& a) {
    switch (a.kind) {
      case Attr::Kind::None:
        out_ << "none";
        break;
      case Attr::Kind::Bool:
        out_ << (a.i ? "true" : "false");
        break;
      case Attr::Kind::Int:
        out_ << a.i;
        break;
      case Attr::Kind::Float:
        out_ << float_text(a.f);
        break;
      case Attr::Kind::String:
        out_ << quoted(a.s);
        break;
      case Attr::Kind::Ref:
        out_ << ref(static_cast<int>(a.i));
        break;
      case Attr::Kind::List:
        out_ << "[";
        for (size_t k = 0; k < a.list.size(); ++k) {
          if (k) out_ << ", ";
          attr(a.list[k]);
        }
        out_ << "]";
        break;
    }
  }

  std::ostringstream& out_;
  std::unordered_map<int, int> names_;
};

// ---- parsing ----

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Graph parse() {
    Graph g = graph();
    skip_space();
    if (pos_ != text_.size()) fail("end of text");
    return g;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    int line = 1, column = 1;
    for (size_t k = 0; k < pos_ && k < text_.size(); ++k) {
      if (text_[k] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw ParseError("IR text, line " + std::to_string(line) + " column " + std::to_string(column) +
                     ": expected " + expected);
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(const std::string& token) {
    skip_space();
    if (text_.compare(pos_, token.size(), token) == 0) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  void expect(const std::string& token) {
    if (!accept(token)) fail("'" + token + "'");
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  std::string identifier() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (pos_ == start) fail("a name");
    return text_.substr(start, pos_ - start);
  }

  int64_t integer() {
    skip_space();
    char* end = nullptr;
    const long long v = std::strtoll(text_.c_str() + pos_, &end, 10);
    if (end == text_.c_str() + pos_) fail("an integer");
    pos_ = end - text_.c_str();
    return v;
  }

  std::string string_literal() {
    expect("\"");
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        c = text_[pos_++];
        if (c == 'n') c = '\n';
      }
      out += c;
    }
    if (pos_ >= text_.size()) fail("a closing '\"'");
    ++pos_;
    return out;
  }

  // %N: the value named N in the current scope.
  int reference() {
    expect("%");
    const int64_t name = integer();
    const auto it = scope_.find(name);
    if (it == scope_.end()) fail("a defined value (%" + std::to_string(name) + " is undefined)");
    return it->second;
  }

  void definition(Graph& g, std::vector<int>& into) {
    expect("%");
    const int64_t name = integer();
    expect(":");
    Value v;
    const std::string type = identifier();
    if (type == "int") {
      v.kind = ValueKind::Int;
    } else if (type == "float") {
      v.kind = ValueKind::Float;
    } else if (type == "none") {
      v.kind = ValueKind::None;
    } else {
      if (!parse_dtype(type, &v.dtype)) fail("a type (not '" + type + "')");
      expect("[");
      while (!accept("]")) {
        if (!v.shape.empty()) expect(",");
        if (peek('"')) {
          v.shape.push_back(Dim::symbolic(string_literal()));
        } else {
          v.shape.push_back(Dim::known(integer()));
        }
      }
      if (accept("{")) {
        while (!accept("}")) {
          if (!v.dim_order.empty()) expect(",");
          v.dim_order.push_back(static_cast<int>(integer()));
        }
      } else {
        for (size_t d = 0; d < v.shape.size(); ++d) v.dim_order.push_back(static_cast<int>(d));
      }
    }
    const int id = g.add_value(std::move(v));
    if (scope_.count(name)) fail("a new value name (%" + std::to_string(name) + " is defined)");
    scope_[name] = id;
    into.push_back(id);
  }

  Attr attr_value() {
    skip_space();
    if (peek('"')) return Attr::string(string_literal());
    if (peek('%')) return Attr::ref(reference());
    if (accept("[")) {
      std::vector<Attr> items;
      while (!accept("]")) {
        if (!items.empty()) expect(",");
        items.push_back(attr_value());
      }
      return Attr::of_list(std::move(items));
    }
    if (accept("none")) return Attr::none();
    if (accept("true")) return Attr::boolean(true);
    if (accept("false")) return Attr::boolean(false);
    if (accept("nan")) return Attr::real(std::nan(""));
    if (accept("inf")) return Attr::real(INFINITY);
    if (accept("-inf")) return Attr::real(-INFINITY);
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                                   std::strchr("+-.eE", text_[pos_]) != nullptr)) {
      ++pos_;
    }
    const std::string number = text_.substr(start, pos_ - start);
    if (number.empty()) fail("an attribute value");
    if (number.find_first_of(".eE") != std::string::npos) {
      return Attr::real(std::strtod(number.c_str(), nullptr));
    }
    return Attr::integer(std::strtoll(number.c_str(), nullptr, 10));
  }

  Graph graph() {
    auto saved = scope_;
    scope_.clear();
    Graph g;
    expect("graph");
    expect("(");
    while (!accept(")")) {
      if (!g.inputs.empty()) expect(",");
      definition(g, g.inputs);
    }
    expect("{");
    while (!accept("return")) {
      Node node;
      do {
        definition(g, node.outputs);
      } while (accept(","));
      expect("=");
      node.op = identifier();
      if (accept("[")) {
        while (!accept("]")) {
          if (!node.attrs.empty()) expect(",");
          const std::string name = identifier();
          expect("=");
          node.attrs[name] = attr_value();
        }
      }
      expect("(");
      while (!accept(")")) {
        if (!node.inputs.empty()) expect(",");
        node.inputs.push_back(reference());
      }
      if (accept("{")) {
        auto outer = scope_;
        node.body = std::make_shared<Graph>(graph());
        scope_ = outer;
        expect("}");
      }
      g.nodes.push_back(std::move(node));
    }
    expect("(");
    while (!accept(")")) {
      if (!g.outputs.empty()) expect(",");
      if (accept("_")) {
        g.outputs.push_back(-1);
      } else {
        g.outputs.push_back(reference());
      }
    }
    expect("}");
    scope_ = saved;
    return g;
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::unordered_map<int64_t, int> scope_;
};

}  // namespace

std::string print_graph(const Graph& graph) {
  std::ostringstream out;
  Printer(out).graph(graph, 0);
  return out.str();
}

Graph parse_graph(const std::string& text) { return Parser(text).parse(); }

}  // namespace openneuron::compiler
