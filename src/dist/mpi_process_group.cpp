// MPI collectives. Non-blocking MPI calls back every collective; Work::wait polls with a
// deadline, so a rank that never arrives ends the job with a message instead of a hang.
#include "strider/dist/mpi_process_group.h"

#include <mpi.h>

#include <cstdio>
#include <thread>

#include "strider/core/reduced_float.h"
#include "dist/buffer_math.h"

namespace strider::dist {
namespace {

// bfloat16/float16 travel as 16-bit words; reductions on them use these user ops.
template <class T, bool kMax>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    store_as(b[i], kMax ? (x > y ? x : y) : x + y);
  }
}

struct Ops16 {
  MPI_Op bf16_sum, bf16_max, f16_sum, f16_max;
};

Ops16& ops16() {
  static Ops16 o = [] {
    Ops16 r;
    MPI_Op_create(&reduce16<BFloat16, false>, 1, &r.bf16_sum);
    MPI_Op_create(&reduce16<BFloat16, true>, 1, &r.bf16_max);
    MPI_Op_create(&reduce16<Half, false>, 1, &r.f16_sum);
    MPI_Op_create(&reduce16<Half, true>, 1, &r.f16_max);
    return r;
  }();
  return o;
}

MPI_Datatype mpi_type(ScalarType t) {
  switch (t) {
    case kFloat: return MPI_FLOAT;
    case kDouble: return MPI_DOUBLE;
    case kLong: return MPI_INT64_T;
    case kInt: return MPI_INT32_T;
    case kByte: return MPI_UINT8_T;
    case kBool: return MPI_C_BOOL;
    case kBFloat16: case kHalf: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ScalarType t, ReduceOp op) {
  const bool max = op == ReduceOp::Max;
  if (t == kBFloat16) return max ? ops16().bf16_max : ops16().bf16_sum;
  if (t == kHalf) return max ? ops16().f16_max : ops16().f16_sum;
  return max ? MPI_MAX : MPI_SUM;
}

void check_dense(const Tensor& t, const char* op) {
  STRIDER_CHECK(t.defined() && t.is_non_overlapping_and_dense(), op, "collectives need dense tensors, got ",
                t.defined() ? t.sizes() : IntArrayRef(), "@", t.defined() ? t.strides() : IntArrayRef(),
                "; call .contiguous() first");
  STRIDER_CHECK(t.numel() < (int64_t{1} << 31), op, "tensor of ", t.numel(), " elements exceeds MPI's int count");
}

class MpiWork final : public Work {
 public:
  MpiWork(const MpiProcessGroup* pg, const char* name, std::function<void()> after)
      : pg_(pg), name_(name), after_(std::move(after)) {}
  MPI_Request* request() { return &request_; }

  bool is_completed() override {
    if (done_) return true;
    int flag = 0;
    MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    if (flag) finish();
    return done_;
  }

  void wait() override {
    const auto deadline = std::chrono::steady_clock::now() + pg_->timeout();
    int spins = 0;
    while (!is_completed()) {
      if (std::chrono::steady_clock::now() > deadline)
        pg_->abort(std::string(name_) + " did not complete within " + std::to_string(pg_->timeout().count()) +
                   " ms: at least one other rank never reached it (crashed, hung, or took a different path)");
      if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  void finish() {
    done_ = true;
    if (after_) after_();
  }
  const MpiProcessGroup* pg_;
  const char* name_;
  std::function<void()> after_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

void check(int rc, const MpiProcessGroup* pg, const char* op) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    pg->abort(std::string(op) + " failed: " + std::string(msg, static_cast<size_t>(len)));
  }
}

}  // namespace

std::shared_ptr<MpiProcessGroup> MpiProcessGroup::init(int* argc, char*** argv) {
  static std::shared_ptr<MpiProcessGroup> world;
  if (world) return world;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  world = std::shared_ptr<MpiProcessGroup>(new MpiProcessGroup(rank, size));
  return world;
}

MpiProcessGroup::~MpiProcessGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiProcessGroup::abort(const std::string& message) const {
  std::fprintf(stderr, "strider: [rank %d of %d] %s; aborting all ranks\n", rank_, size_, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::shared_ptr<Work> MpiProcessGroup::all_reduce_async(const Tensor& t, ReduceOp op) {
  check_dense(t, "all_reduce");
  const int n = size_;
  auto work = std::make_shared<MpiWork>(this, "all_reduce", op == ReduceOp::Avg ? std::function<void()>([t, n] {
                                                                detail::scale_in_place(t, 1.0 / n);
                                                              }) : nullptr);
  check(MPI_Iallreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.numel()), mpi_type(t.dtype()), mpi_op(t.dtype(), op),
                       MPI_COMM_WORLD, work->request()), this, "all_reduce");
  return work;
}

std::shared_ptr<Work> MpiProcessGroup::all_gather_async(const Tensor& out, const Tensor& in) {
  check_dense(out, "all_gather");
  check_dense(in, "all_gather");
  STRIDER_CHECK(out.dtype() == in.dtype() && out.numel() == in.numel() * size_, "all_gather", "output of ",
                out.numel(), " ", out.dtype(), " elements cannot hold ", size_, " x ", in.numel(), " ", in.dtype());
  auto work = std::make_shared<MpiWork>(this, "all_gather", nullptr);
  check(MPI_Iallgather(in.data(), static_cast<int>(in.numel()), mpi_type(in.dtype()), out.data(),
                       static_cast<int>(in.numel()), mpi_type(out.dtype()), MPI_COMM_WORLD, work->request()),
        this, "all_gather");
  return work;
}

std::shared_ptr<Work> MpiProcessGroup::reduce_scatter_async(const Tensor& out, const Tensor& in, ReduceOp op) {
  check_dense(out, "reduce_scatter");
  check_dense(in, "reduce_scatter");
  STRIDER_CHECK(out.dtype() == in.dtype() && in.numel() == out.numel() * size_, "reduce_scatter", "input of ",
                in.numel(), " elements does not split into ", size_, " blocks of ", out.numel());
  const int n = size_;
  auto work = std::make_shared<MpiWork>(this, "reduce_scatter", op == ReduceOp::Avg ? std::function<void()>([out, n] {
                                                                    detail::scale_in_place(out, 1.0 / n);
                                                                  }) : nullptr);
  check(MPI_Ireduce_scatter_block(in.data(), out.data(), static_cast<int>(out.numel()), mpi_type(in.dtype()),
                                  mpi_op(in.dtype(), op), MPI_COMM_WORLD, work->request()),
        this, "reduce_scatter");
  return work;
}

std::shared_ptr<Work> MpiProcessGroup::broadcast_async(const Tensor& t, int root) {
  check_dense(t, "broadcast");
  STRIDER_CHECK(root >= 0 && root < size_, "broadcast", "root ", root, " is not a rank of a world of size ", size_);
  auto work = std::make_shared<MpiWork>(this, "broadcast", nullptr);
  check(MPI_Ibcast(t.data(), static_cast<int>(t.numel()), mpi_type(t.dtype()), root, MPI_COMM_WORLD, work->request()),
        this, "broadcast");
  return work;
}

void MpiProcessGroup::barrier() {
  MpiWork work(this, "barrier", nullptr);
  check(MPI_Ibarrier(MPI_COMM_WORLD, work.request()), this, "barrier");
  work.wait();
}

int run_or_abort(const std::shared_ptr<MpiProcessGroup>& pg, const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    pg->abort(e.what());
  }
}

}  // namespace strider::dist
