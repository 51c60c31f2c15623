// The graph IR: values with dtypes, symbolic shapes and layouts; nodes in program order.
// Its text form (text.h) and the reference interpreter (reference_interpreter.h) define it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/core/dtype.h"

namespace openneuron::compiler {

using kernels::DType;

// One dimension: a known size, or a symbolic expression (e.g. "s0", "2*s0") whose value is
// known only at run time. Two dims are equal when both are known and equal, or have the same
// expression.
struct Dim {
  int64_t size = 0;
  std::string symbol;  // empty: `size` is the dimension

  static Dim known(int64_t n) { return Dim{n, {}}; }
  static Dim symbolic(std::string expr) { return Dim{0, std::move(expr)}; }
  bool is_symbolic() const { return !symbol.empty(); }
  bool operator==(const Dim& other) const {
    return is_symbolic() ? symbol == other.symbol : (!other.is_symbolic() && size == other.size);
  }
  bool operator!=(const Dim& other) const { return !(*this == other); }
};

enum class ValueKind : uint8_t {
  Tensor,  // a device tensor (or, for `scalar` nodes, a host scalar broadcast like one)
  Int,     // a host integer (a symbolic size, an int argument)
  Float,   // a host float
  None,    // an absent optional result
};

// A value is defined once: by the graph's inputs or by one node's outputs.
struct Value {
  ValueKind kind = ValueKind::Tensor;
  DType dtype = DType::Float32;
  std::vector<Dim> shape;
  // Physical order of the dims, outermost first (row-major: 0, 1, ..., n-1). Empty means
  // row-major; outputs the compiler allocates are dense in this order.
  std::vector<int> dim_order;
};

// Attribute values: numbers, strings, references to values and (nested) lists of those.
struct Attr {
  enum class Kind : uint8_t { None, Bool, Int, Float, String, Ref, List };
  Kind kind = Kind::None;
  int64_t i = 0;  // Bool, Int; Ref: the value id
  double f = 0.0;
  std::string s;
  std::vector<Attr> list;

  static Attr none() { return Attr{}; }
  static Attr boolean(bool b) { return Attr{Kind::Bool, b ? 1 : 0, 0.0, {}, {}}; }
  static Attr integer(int64_t v) { return Attr{Kind::Int, v, 0.0, {}, {}}; }
  static Attr real(double v) { return Attr{Kind::Float, 0, v, {}, {}}; }
  static Attr string(std::string v) { return Attr{Kind::String, 0, 0.0, std::move(v), {}}; }
  static Attr ref(int value) { return Attr{Kind::Ref, value, 0.0, {}, {}}; }
  static Attr of_list(std::vector<Attr> items) {
    return Attr{Kind::List, 0, 0.0, {}, std::move(items)};
  }
  bool operator==(const Attr& other) const;
};

struct Graph;

// One operation. `op` names it (see ops.h); `inputs` are every value it reads, in order;
// `outputs` the values it defines. A `fused` node carries its body as a subgraph whose
// inputs bind to the node's inputs and whose outputs define the node's outputs.
struct Node {
  std::string op;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<std::string, Attr> attrs;
  std::shared_ptr<Graph> body;

  const Attr* attr(const std::string& name) const;
  int64_t int_attr(const std::string& name, int64_t otherwise) const;
  std::string string_attr(const std::string& name, const std::string& otherwise = "") const;
};

// A program: values (indexed by id), its inputs and outputs (value ids), nodes in program order.
struct Graph {
  std::vector<Value> values;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<Node> nodes;

  int add_value(Value value) {
    values.push_back(std::move(value));
    return static_cast<int>(values.size()) - 1;
  }
};

// Replaces every use of value `from` (node inputs, reference attrs, graph outputs) by `to`.
void replace_uses(Graph& graph, int from, int to);

// The ids of values each node reads, counted over the whole graph (graph outputs included).
std::vector<int> use_counts(const Graph& graph);

}  // namespace openneuron::compiler
