#include "strider/dist/process_group.h"

#include "dist/buffer_math.h"
#include "strider/config.h"
#if STRIDER_WITH_MPI
#include "strider/dist/mpi_process_group.h"
#endif

namespace strider::dist {
namespace {

thread_local std::string current_label;

class DoneWork final : public Work {
 public:
  void wait() override {}
  bool is_completed() override { return true; }
};

void check_sizes(const Tensor& out, const Tensor& in, const char* op) {
  STRIDER_CHECK(out.numel() == in.numel() && out.dtype() == in.dtype(), op, "output has ", out.numel(), " ",
                out.dtype(), " elements but input has ", in.numel(), " ", in.dtype(), " (world size 1)");
}

// The same rule as with MPI, so code that runs alone also runs under mpirun.
void check_dense(const Tensor& t, const char* op) {
  STRIDER_CHECK(t.defined(), op, "the tensor is undefined (an empty Tensor()); pass one with memory");
  STRIDER_CHECK(t.is_non_overlapping_and_dense(), op, "collectives need dense tensors, got ",
                t.defined() ? t.sizes() : IntArrayRef(), "@", t.defined() ? t.strides() : IntArrayRef(),
                "; call .contiguous() first");
}

// all_to_all and shift in a world of one: the rank's own block, copied. all_to_all's blocks are
// of the logical order (`blocks`), as with MPI; shift copies storage to storage.
std::shared_ptr<Work> own_block(const Tensor& out, const Tensor& in, const char* op, bool blocks) {
  detail::mark_written(out);
  check_dense(out, op);
  check_dense(in, op);
  if (blocks) {
    detail::check_block_layout(out, op, "output");
    detail::check_block_layout(in, op, "input");
  } else {
    detail::check_same_layout(out, in, op);
  }
  STRIDER_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel(), op, "output of ", out.numel(), " ",
                out.dtype(), " elements does not match the input's ", in.numel(), " ", in.dtype());
  detail::copy_dense(out, in);
  return std::make_shared<DoneWork>();
}

}  // namespace

std::shared_ptr<Work> SingleProcessGroup::all_reduce_async(const Tensor& t, ReduceOp) {
  detail::mark_written(t);
  check_dense(t, "all_reduce");
  detail::check_reducible(t.dtype(), "all_reduce");
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> SingleProcessGroup::all_gather_async(const Tensor& out, const Tensor& in) {
  detail::mark_written(out);
  check_dense(out, "all_gather");
  check_dense(in, "all_gather");
  detail::check_block_layout(out, "all_gather", "output");
  detail::check_block_layout(in, "all_gather", "input");
  check_sizes(out, in, "all_gather");
  if (!detail::gathers_in_place(out, in, 0, "all_gather")) detail::copy_dense(out, in);
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> SingleProcessGroup::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp) {
  detail::mark_written(out);
  check_dense(out, "reduce_scatter");
  check_dense(in, "reduce_scatter");
  detail::check_block_layout(out, "reduce_scatter", "output");
  detail::check_block_layout(in, "reduce_scatter", "input");
  detail::check_reducible(in.dtype(), "reduce_scatter");
  check_sizes(out, in, "reduce_scatter");
  detail::copy_dense(out, in);
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> SingleProcessGroup::all_to_all_async(const Tensor& out, const Tensor& in) {
  return own_block(out, in, "all_to_all", true);
}

std::shared_ptr<Work> SingleProcessGroup::broadcast_async(const Tensor& t, int root) {
  detail::mark_written(t);
  check_dense(t, "broadcast");
  STRIDER_CHECK(root == 0, "broadcast", "root ", root, " does not exist in a world of size 1");
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> SingleProcessGroup::shift_async(const Tensor& out, const Tensor& in, int) {
  return own_block(out, in, "shift", false);
}

std::shared_ptr<Work> SingleProcessGroup::all_gather_pieces_async(const Tensor& out, const Tensor& in,
                                                                  std::vector<Piece> pieces) {
  detail::mark_written(out);
  detail::check_pieces(out, in, pieces, 1);
  detail::scatter_pieces(out.data(), in.data(), pieces, 0, element_size(in.dtype()));
  return std::make_shared<DoneWork>();
}

std::shared_ptr<Work> SingleProcessGroup::reduce_scatter_pieces_async(const Tensor& out, const Tensor& in,
                                                                      std::vector<Piece> pieces, ReduceOp) {
  detail::mark_written(out);
  detail::check_pieces(in, out, pieces, 1, "reduce_scatter_pieces");
  detail::check_reducible(in.dtype(), "reduce_scatter_pieces");
  detail::gather_pieces(out.data(), in.data(), pieces, 0, element_size(in.dtype()));
  return std::make_shared<DoneWork>();
}

}  // namespace strider::dist

namespace strider::dist {

std::shared_ptr<ProcessGroup> SingleProcessGroup::split(int color, int) {
  STRIDER_CHECK(color >= 0, "split", "color must be >= 0, got ", color);
  auto g = std::make_shared<SingleProcessGroup>();
  g->set_timeout(timeout());
  return g;
}

CollectiveLabel::CollectiveLabel(std::string label) : previous_(std::move(current_label)) {
  current_label = std::move(label);
}
CollectiveLabel::~CollectiveLabel() { current_label = std::move(previous_); }
const std::string& CollectiveLabel::current() { return current_label; }

void ProcessGroup::abort(const std::string& message) const { throw Error(message); }

std::shared_ptr<ProcessGroup> init_process_group(int* argc, char*** argv, const ProcessGroupOptions& options) {
  STRIDER_CHECK(options.timeout.count() > 0, "init_process_group", "the collective timeout must be positive, got ",
                options.timeout.count(), " ms");
#if STRIDER_WITH_MPI
  std::shared_ptr<ProcessGroup> pg = MpiProcessGroup::init(argc, argv);
#else
  std::shared_ptr<ProcessGroup> pg = std::make_shared<SingleProcessGroup>();
#endif
  STRIDER_CHECK(options.heartbeat_timeout.count() > 0, "init_process_group", "the heartbeat timeout must be positive, got ",
                options.heartbeat_timeout.count(), " ms");
  pg->set_timeout(options.timeout);
  pg->set_heartbeat_timeout(options.heartbeat_timeout);
  return pg;
}

int run_or_abort(ProcessGroup& pg, const std::function<int()>& fn) {
  int rc = 0;
  try {
    rc = fn();
  } catch (const std::exception& e) {
    pg.abort(e.what());
  } catch (...) {
    pg.abort("unknown exception (not derived from std::exception)");
  }
  pg.finish();
  return rc;
}

}  // namespace strider::dist
