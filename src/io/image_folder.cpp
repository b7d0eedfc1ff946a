#include "strider/io/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "strider/io/image.h"

namespace fs = std::filesystem;

namespace strider::io {
namespace {

constexpr const char* kOp = "ImageFolder";

bool is_image_name(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ext : {".png", ".jpg", ".jpeg"}) {
    const size_t n = std::char_traits<char>::length(ext);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0) return true;
  }
  return false;
}

using Found = std::vector<std::pair<std::string, std::string>>;

// Walks `dir` into `found`, following directory links. `walking` holds the
// real directories from / down to `dir`: a link back to one of them would be
// walked forever (a link to "." or to a parent, or two links leading to each other), so it is an
// error naming the link. Two links to the same directory elsewhere list it twice, as os.walk does.
void walk(const fs::path& dir, std::vector<fs::path>& walking, Found& found) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      const fs::path real = fs::canonical(it->path(), ec2);
      if (ec2) continue;  // vanished or unreadable: skipped, as any entry it cannot read
      STRIDER_CHECK(std::find(walking.begin(), walking.end(), real) == walking.end(), kOp, it->path().string(),
                    " leads back to ", real.string(), ", a directory it is inside of: the folder would be walked "
                    "forever. Remove the link or point it elsewhere");
      walking.push_back(real);
      walk(it->path(), walking, found);
      walking.pop_back();
    } else if (is_image_name(it->path().filename().string())) {
      found.emplace_back(dir.string(), it->path().filename().string());
    }
  }
  STRIDER_CHECK(!ec, kOp, "cannot list ", dir.string(), ": ", ec.message());
}

// Image files under `dir`, sorted by (directory, name) as torchvision's sorted(os.walk(...)) gives.
Found images_under(const fs::path& dir) {
  Found found;
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  STRIDER_CHECK(!ec, kOp, "cannot resolve ", dir.string(), ": ", ec.message());
  // The class folder's ancestors count as walked too: a link to the root (or to /) is caught at
  // the link, not after walking everything under it.
  std::vector<fs::path> walking;
  for (fs::path p = real; walking.empty() || p != walking.back(); p = p.parent_path()) walking.push_back(p);
  walk(dir, walking, found);
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options) : root_(root), options_(options) {
  STRIDER_CHECK(options.image_size >= 0, kOp, root, ": image_size must be >= 0, got ", options.image_size);
  STRIDER_CHECK(options.channels == 0 || options.channels == 1 || options.channels == 3, kOp, root,
                ": channels must be 0 (as decoded), 1 or 3, got ", options.channels);
  std::error_code ec;
  STRIDER_CHECK(fs::is_directory(root, ec), kOp, root, " is not a directory; expected root/<class>/<image>");
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) classes_.push_back(it->path().filename().string());
  }
  STRIDER_CHECK(!ec, kOp, "cannot list ", root, ": ", ec.message());
  STRIDER_CHECK(!classes_.empty(), kOp, root,
                " has no class folder; expected root/<class>/<image>.png|jpg|jpeg, one subdirectory per class");
  std::sort(classes_.begin(), classes_.end());
  for (size_t c = 0; c < classes_.size(); ++c) {
    const fs::path dir = fs::path(root) / classes_[c];
    const auto images = images_under(dir);
    STRIDER_CHECK(!images.empty(), kOp, "class folder ", dir.string(),
                  " has no image (.png, .jpg, .jpeg); add images or remove the folder");
    for (const auto& [parent, name] : images)
      samples_.push_back({(fs::path(parent) / name).string(), static_cast<int64_t>(c)});
  }
}

int64_t ImageFolder::label(int64_t i) const {
  STRIDER_CHECK(i >= 0 && i < size(), kOp, root_, ": sample ", i, " is out of range [0, ", size(), ")");
  return samples_[static_cast<size_t>(i)].label;
}

Tensor ImageFolder::image(int64_t i) const {
  label(i);  // range check
  const std::string& path = samples_[static_cast<size_t>(i)].path;
  Tensor img = read_image(path);  // names the file on any failure
  try {
    if (options_.channels != 0) img = convert_channels(img, options_.channels);
    if (options_.image_size > 0) img = resize_and_center_crop(img, options_.image_size);
  } catch (const Error& e) {  // out of memory, say: which image it was
    STRIDER_CHECK(false, kOp, path, " (", img.sizes()[1], "x", img.sizes()[2], ", ", img.sizes()[0],
                  " channels): ", e.what());
  }
  return img;
}

}  // namespace strider::io
