#include "strider/checkpoint/full_save.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "checkpoint/export_metadata.h"
#include "checkpoint/holdings.h"
#include "strider/autograd/grad_mode.h"
#include "strider/checkpoint/manifest.h"
#include "strider/core/error.h"
#include "strider/dist/consistency.h"
#include "strider/io/safetensors_writer.h"
#include "strider/ops/factory.h"

namespace strider::checkpoint {
namespace {

using Json = nlohmann::json;
constexpr const char* kOp = "full save";

// This rank's holdings and the rows of each it sends, as one line for the others.
std::string describe_rows(const std::vector<detail::Holding>& held) {
  Json out = Json::array();
  for (const detail::Holding& h : held) {
    const auto piece = detail::piece_to_write(h);
    out.push_back({{"key", h.key},
                   {"dtype", static_cast<int>(h.rows.dtype())},
                   {"shape", h.global_shape},
                   {"rows", piece ? Json::array({piece->row_begin, piece->row_end}) : Json()}});
  }
  return out.dump();
}

// Every tensor with the rank that sends each of its row ranges, from all ranks' descriptions.
// The same on every rank (the same input), so every rank throws the same error or none.
std::map<std::string, TensorRecord> plan_transfer(const std::vector<std::string>& reports) {
  std::map<std::string, TensorRecord> plan;
  for (size_t r = 0; r < reports.size(); ++r) {
    const Json rows = Json::parse(reports[r]);
    STRIDER_CHECK(r == 0 || rows.size() == plan.size(), kOp, "rank ", r, " holds ", rows.size(),
                  " tensors and rank 0 holds ", plan.size(), "; every rank must pass the same model");
    for (const Json& t : rows) {
      const std::string key = t["key"].get<std::string>();
      const TensorRecord seen{static_cast<ScalarType>(t["dtype"].get<int>()), t["shape"].get<DimVector>(), {}};
      auto [it, fresh] = plan.emplace(key, seen);
      STRIDER_CHECK(fresh == (r == 0), kOp, "rank ", r, (fresh ? " holds '" : " lists '"), key,
                    (fresh ? "', which rank 0 does not" : "' twice"), "; every rank must pass the same model");
      STRIDER_CHECK(it->second.dtype == seen.dtype && it->second.shape == seen.shape, kOp, "'", key, "' is ",
                    IntArrayRef(seen.shape), " ", seen.dtype, " on rank ", r, " but ", IntArrayRef(it->second.shape), " ",
                    it->second.dtype, " on rank 0");
      if (!t["rows"].is_null())
        it->second.shards.push_back({static_cast<int>(r), t["rows"][0].get<int64_t>(), t["rows"][1].get<int64_t>(), 0});
    }
  }
  for (auto& [key, rec] : plan) {
    std::sort(rec.shards.begin(), rec.shards.end(), [](const auto& a, const auto& b) { return a.row_begin < b.row_begin; });
    int64_t next = 0;
    for (const ShardRecord& s : rec.shards) {
      STRIDER_CHECK(s.row_begin == next, kOp, "'", key, "': rows [", next, ", ", s.row_begin,
                    ") are held by no rank, or twice; the ranks' layouts differ");
      next = s.row_end;
    }
    STRIDER_CHECK(next == rec.rows(), kOp, "'", key, "': rows [", next, ", ", rec.rows(),
                  ") are held by no rank; the ranks' layouts differ");
  }
  return plan;
}

// Rows [begin, end) of the whole tensor from the rank holding them, as one flat tensor.
Tensor rows_here(const detail::Holding& h, int64_t begin, int64_t end) {
  if (h.global_shape.empty()) return h.rows.reshape({1}).contiguous();
  return h.rows.narrow(0, begin - h.row_offset, end - begin).contiguous().reshape({-1});
}

}  // namespace

FullSaveReport save_full(const std::string& out_file, nn::Module& model, int64_t step, dist::ProcessGroup* pg,
                         FullSaveOptions options) {
  autograd::NoGradGuard no_grad;
  const int rank = pg ? pg->rank() : 0, world = pg ? pg->size() : 1;
  if (pg) dist::check_same_across_ranks(*pg, "the full save's step and file", {std::to_string(step), out_file});
  STRIDER_CHECK(step >= 0, kOp, "step ", step, " is negative");
  STRIDER_CHECK(options.piece_bytes > 0, kOp, "FullSaveOptions::piece_bytes is 0; pass the bytes sent at once");
  const detail::ModelLayout layout = detail::describe_model(model, rank, world);
  std::vector<detail::Holding> held;
  for (const detail::ParamView& p : layout.params) held.push_back(p.holding);
  held.insert(held.end(), layout.buffers.begin(), layout.buffers.end());
  std::map<std::string, const detail::Holding*> mine;
  for (const detail::Holding& h : held) mine[h.key] = &h;

  const std::string described = describe_rows(held);
  const auto plan = plan_transfer(pg ? dist::all_gather_strings(*pg, "full save: each rank's rows", described)
                                     : std::vector<std::string>{described});

  // Rank 0 writes; a write error there is carried to the end, so no rank leaves the transfer early.
  FullSaveReport report{.file = out_file, .tensors = static_cast<int64_t>(plan.size())};
  std::unique_ptr<io::SafetensorsWriter> writer;
  std::string write_error;
  auto on_rank0 = [&](const std::function<void()>& fn) {
    if (rank != 0 || !write_error.empty()) return;
    try {
      fn();
    } catch (const std::exception& e) {
      write_error = e.what();
      writer.reset();  // removes the unfinished file
    }
  };
  on_rank0([&] {
    const std::string prefix = model_key("");
    std::vector<io::SafetensorsEntry> entries;
    for (const auto& [key, rec] : plan) entries.push_back({key.substr(prefix.size()), rec.dtype, rec.shape});
    writer = std::make_unique<io::SafetensorsWriter>(
        out_file, entries,
        detail::export_metadata(step, layout.strategy, world));
  });

  for (const auto& [key, rec] : plan) {
    const uint64_t row_bytes = rec.row_bytes();
    const uint64_t fit = options.piece_bytes / std::max<uint64_t>(row_bytes, 1);
    const int64_t rows_per_piece = std::clamp<int64_t>(static_cast<int64_t>(std::min<uint64_t>(fit, uint64_t(rec.rows()))), 1, rec.rows());
    for (const ShardRecord& s : rec.shards) {
      const int from = static_cast<int>(s.file);  // here: the rank sending these rows
      for (int64_t b = s.row_begin; b < s.row_end; b += rows_per_piece) {
        const int64_t e = std::min(s.row_end, b + rows_per_piece);
        const int64_t numel = (e - b) * static_cast<int64_t>(row_bytes / element_size(rec.dtype));
        Tensor piece;
        if (from == rank) piece = rows_here(*mine.at(key), b, e);
        else if (rank == 0) piece = empty({numel}, rec.dtype);
        if (from != 0) {  // travels to rank 0; the other ranks only forward or skip it
          if (!piece.defined()) piece = empty({numel}, rec.dtype);
          pg->broadcast(piece, from);
        }
        report.max_piece_bytes = std::max<uint64_t>(report.max_piece_bytes, static_cast<uint64_t>(numel) * element_size(rec.dtype));
        on_rank0([&] { writer->write(piece); });
      }
    }
  }
  on_rank0([&] { report.bytes = writer->finish().bytes; });
  if (pg) write_error = dist::all_gather_strings(*pg, "full save: the outcome", write_error)[0];
  STRIDER_CHECK(write_error.empty(), kOp, "step ", step, ": writing ", out_file, " on rank 0 failed: ", write_error);
  return report;
}

}  // namespace strider::checkpoint
