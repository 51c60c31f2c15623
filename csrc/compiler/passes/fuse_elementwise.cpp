// Elementwise fusion: grows groups of same-shaped pointwise/cast nodes along their data flow and
// replaces each group by one `fused` node placed where its last member was.
//
// Legality (the one predicate): a node joins a group that produced one of its inputs when the
// group is still open and has the node's iteration shape: its output's shape for pointwise and
// cast nodes, its input's shape for a reduce, whose input must also be row-major (the order
// eager's reduction reads it in). A group closes as soon as a node outside it reads one of its
// values, so moving all members down to the last one never moves a value past a reader; a
// reduce closes the group it joins or starts (it ends the body).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ops.h"
#include "compiler/passes/passes.h"

namespace openneuron::compiler {

namespace {

struct Group {
  std::vector<size_t> members;  // node indices, ascending once sorted
  std::vector<Dim> shape;
  bool open = true;
  int merged_into = -1;
};

class Fuser {
 public:
  Fuser(Graph& graph, bool join) : g_(graph), join_(join) {}

  void run() {
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& node = g_.nodes[k];
      if (node.op == ops::kScalar) {
        scalar_nodes_[node.outputs[0]] = node;
      } else if (node.op == ops::kPointwise || node.op == ops::kCast) {
        place(k);
      } else if (node.op == ops::kReduce) {
        place_reduce(k);
      } else {
        for (int input : node.inputs) close_reader_of(input);
      }
    }
    rebuild();
  }

 private:
  int find(int group) {
    while (groups_[group].merged_into >= 0) group = groups_[group].merged_into;
    return group;
  }

  void close_reader_of(int value) {
    const auto it = group_of_.find(value);
    if (it != group_of_.end()) groups_[find(it->second)].open = false;
  }

  void place(size_t k) {
    const Node& node = g_.nodes[k];
    const std::vector<Dim>& shape = g_.values[node.outputs[0]].shape;
    int target = -1;
    std::vector<int> foreign;
    for (int input : node.inputs) {
      const auto it = group_of_.find(input);
      if (it == group_of_.end()) continue;
      const int group = find(it->second);
      if (join_ && groups_[group].open && groups_[group].shape == shape) {
        if (target < 0) {
          target = group;
        } else if (group != target) {  // two open producers of one shape become one group
          Group& from = groups_[group];
          groups_[target].members.insert(groups_[target].members.end(), from.members.begin(),
                                         from.members.end());
          from.members.clear();
          from.merged_into = target;
        }
      } else {
        foreign.push_back(group);
      }
    }
    for (int group : foreign) {
      if (find(group) != target) groups_[find(group)].open = false;
    }
    if (target < 0) {
      target = static_cast<int>(groups_.size());
      groups_.push_back(Group{{}, shape, true, -1});
    }
    groups_[target].members.push_back(k);
    group_of_[node.outputs[0]] = target;
  }

  void place_reduce(size_t k) {
    const Node& node = g_.nodes[k];
    const Value& in = g_.values[node.inputs[0]];
    bool row_major = true;
    for (size_t d = 0; d < in.dim_order.size(); ++d) row_major &= in.dim_order[d] == int(d);
    int target = -1;
    const auto it = group_of_.find(node.inputs[0]);
    if (it != group_of_.end()) {
      const int group = find(it->second);
      if (join_ && row_major && groups_[group].open && groups_[group].shape == in.shape) {
        target = group;
      } else {
        groups_[group].open = false;
      }
    }
    if (target < 0) {
      target = static_cast<int>(groups_.size());
      groups_.push_back(Group{{}, in.shape, true, -1});
    }
    groups_[target].members.push_back(k);
    groups_[target].open = false;
    group_of_[node.outputs[0]] = target;
  }

  // The fused node of one group, reading values defined outside it.
  Node build(const Group& group, const std::vector<int>& uses) {
    auto body = std::make_shared<Graph>();
    Node fused;
    fused.op = ops::kFused;
    std::unordered_map<int, int> inner;  // outer value -> body value
    auto bind = [&](int outer) {
      const auto it = inner.find(outer);
      if (it != inner.end()) return it->second;
      const int id = body->add_value(g_.values[outer]);
      inner[outer] = id;
      const auto scalar = scalar_nodes_.find(outer);
      if (scalar != scalar_nodes_.end()) {
        Node copy = scalar->second;
        copy.outputs = {id};
        body->nodes.push_back(std::move(copy));
      } else {
        body->inputs.push_back(id);
        fused.inputs.push_back(outer);
      }
      return id;
    };
    for (size_t k : group.members) {
      Node copy = g_.nodes[k];
      const Attr* source = copy.attr("src");  // errors name the user's line of the first op
      if (source && !fused.attr("src")) fused.attrs["src"] = *source;
      for (int& input : copy.inputs) input = bind(input);
      const int outer = copy.outputs[0];
      const int id = body->add_value(g_.values[outer]);
      inner[outer] = id;
      copy.outputs = {id};
      body->nodes.push_back(std::move(copy));
      if (uses[outer] > 0) {  // read outside the group, or returned
        body->outputs.push_back(id);
        fused.outputs.push_back(outer);
      }
    }
    fused.body = std::move(body);
    return fused;
  }

  void rebuild() {
    std::vector<bool> member(g_.nodes.size(), false);
    std::vector<int> last_member_group(g_.nodes.size(), -1);
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      Group& group = groups_[gi];
      if (group.members.empty()) continue;
      std::sort(group.members.begin(), group.members.end());
      for (size_t k : group.members) member[k] = true;
      last_member_group[group.members.back()] = static_cast<int>(gi);
    }
    // Reads from outside a value's own group (or as a graph output).
    std::vector<int> outside_uses(g_.values.size(), 0);
    for (int output : g_.outputs) {
      if (output >= 0) ++outside_uses[output];
    }
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& node = g_.nodes[k];
      for (int input : node.inputs) {
        const auto it = group_of_.find(input);
        if (it == group_of_.end()) continue;
        const int producer_group = find(it->second);
        const auto mine = group_of_.find(member[k] ? node.outputs[0] : -1);
        if (!member[k] || mine == group_of_.end() || find(mine->second) != producer_group) {
          ++outside_uses[input];
        }
      }
    }
    std::vector<Node> nodes;
    nodes.reserve(g_.nodes.size());
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (!member[k]) {
        nodes.push_back(std::move(g_.nodes[k]));
        continue;
      }
      if (last_member_group[k] < 0) continue;
      Node fused = build(groups_[last_member_group[k]], outside_uses);
      if (!fused.outputs.empty()) nodes.push_back(std::move(fused));
    }
    g_.nodes = std::move(nodes);
    eliminate_dead_code(g_);
  }

  Graph& g_;
  const bool join_;
  std::vector<Group> groups_;
  std::unordered_map<int, int> group_of_;       // value -> group that defines it
  std::unordered_map<int, Node> scalar_nodes_;  // value -> a copy of its scalar node
};

}  // namespace

void fuse_elementwise(Graph& graph, bool join) { Fuser(graph, join).run(); }

}  // namespace openneuron::compiler
