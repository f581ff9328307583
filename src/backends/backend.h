// The seam every device plugs into (../shared/docs/backends.md): a backend says whether it is available
// on this machine and why not, which nodes it supports (with a reason when not), and runs a node's kernel.
// The executor (runtime/session) asks the backend the user picked (`--device`) and runs every node
// through it; `mpaudit devices` lists the backends with their state. This build has the CPU backend; a
// device backend registers itself beside it.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ops/op.h"

namespace mpa {

// Whether something can be done, and in words why not.
struct Support {
  bool ok = true;
  std::string reason;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // what --device names it: "cpu"
  virtual Support available() const = 0;      // on this machine, or why not
  virtual std::string describe() const = 0;   // the device in words, for `mpaudit devices`
  // Whether it runs `node` (at `opset`) under `config`; static: no allocation, no device work.
  virtual Support supports(const Node& node, int64_t opset, const ExecConfig& config) const = 0;
  // Runs one node: its kernel on the context's inputs, filling the context's outputs.
  virtual void run(const OpKernel& kernel, KernelContext& ctx) const = 0;
};

// The backends of this build, the CPU's first.
const std::vector<const Backend*>& backends();
// The backend `--device NAME` names, available on this machine; fails (mpa::Error) naming the backends
// there are, or why the named one is unavailable.
const Backend& backend_named(const std::string& name);

}  // namespace mpa
