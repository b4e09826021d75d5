// A C++17 engine embedding libpyop: no Python linked, no designated
// initializers, RAII for op instances. It loads the ops of
// ASCEND_CUSTOM_OPP_PATH, lists them, then runs ScaledAdd (examples/ops)
// on host buffers it allocates itself:
//
//   z = x + alpha * y,  x = [1, 2, 3], y = [10, 20, 30], alpha = 2
//
// and prints "z = [21, 42, 63]". Exit status 0 on success, 1 with
// libpyop's message on stderr otherwise.
#include <pyop/pyop.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// A failed libpyop call as an exception carrying pyop_last_error().
struct pyop_failure : std::runtime_error {
  pyop_failure(const std::string &what, int rc)
      : std::runtime_error(what + ": " + pyop_status_name(rc) + ": " + pyop_last_error()) {}
};

void check(int rc, const char *what) {
  if (rc != PYOP_OK) throw pyop_failure(what, rc);
}

// An op instance destroyed with its scope.
using op_ptr = std::unique_ptr<pyop_op, decltype(&pyop_op_destroy)>;

op_ptr create_op(const char *type, const std::vector<pyop_attr> &attrs) {
  pyop_op *op = nullptr;
  check(pyop_op_create(type, attrs.data(), attrs.size(), &op), type);
  return op_ptr(op, &pyop_op_destroy);
}

// Output memory the host owns: one buffer per output index.
struct outputs {
  std::vector<std::vector<unsigned char>> buffers;

  static int alloc(void *user, size_t index, pyop_tensor *t) {
    auto *self = static_cast<outputs *>(user);
    if (self->buffers.size() <= index) self->buffers.resize(index + 1);
    self->buffers[index].assign(t->nbytes ? t->nbytes : 1, 0);
    t->data = self->buffers[index].data();
    return 0;
  }
};

std::vector<std::string> op_types() {
  char **types = nullptr;
  size_t n = 0;
  check(pyop_op_list(&types, &n), "pyop_op_list");
  std::vector<std::string> out(types, types + n);
  pyop_free(types);
  return out;
}

int run() {
  std::printf("libpyop %s (header %s)\n", pyop_version(), PYOP_VERSION_STRING);

  pyop_options options = PYOP_OPTIONS_INIT;
  options.start_python = true;  // this host has no Python of its own
  check(pyop_set_options(&options), "pyop_set_options");
  check(pyop_load(), "pyop_load");

  std::printf("ops:");
  for (const auto &t : op_types()) std::printf(" %s", t.c_str());
  std::printf("\n");

  {
    op_ptr op = create_op("ScaledAdd", {pyop_attr_float("alpha", 2.0)});
    std::vector<float> x{1, 2, 3}, y{10, 20, 30};
    const int64_t shape[] = {3};
    const pyop_tensor tx = pyop_tensor_of(x.data(), PYOP_DTYPE_FLOAT32, 1, shape);
    const pyop_tensor ty = pyop_tensor_of(y.data(), PYOP_DTYPE_FLOAT32, 1, shape);
    const pyop_tensor_list inputs[] = {pyop_tensor_list_of(&tx, 1),
                                       pyop_tensor_list_of(&ty, 1)};

    pyop_tensor desc = PYOP_TENSOR_INIT;
    check(pyop_op_infer_meta(op.get(), inputs, 2, &desc, 1), "infer_meta of ScaledAdd");

    outputs mem;
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    ctx.user = &mem;
    ctx.alloc_output = &outputs::alloc;
    pyop_tensor z = PYOP_TENSOR_INIT;
    check(pyop_op_execute(op.get(), inputs, 2, &z, 1, &ctx), "execute of ScaledAdd");
    if (z.ndim != desc.ndim || z.shape[0] != desc.shape[0])
      throw std::runtime_error("execute produced another shape than infer_meta promised");
    const auto *values = static_cast<const float *>(z.data);
    std::printf("z = [%g, %g, %g]\n", values[0], values[1], values[2]);
  }  // the instance is destroyed here: unload would refuse while it lives

  check(pyop_unload(), "pyop_unload");
  check(pyop_shutdown(), "pyop_shutdown");
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pyop-cpp-host: %s\n", e.what());
    return 1;
  }
}
