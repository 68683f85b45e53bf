// Annotation table cache; see table_cache.h. Layout (little-endian, native widths):
//   magic "DTCOCOT1" | key (size, mtime, hash, options text) | payload length | payload hash |
//   payload: every column of the table, each a count followed by its raw elements (strings as a
//   length table and one blob).
// Only trivially copyable columns are written raw; reading checks every count against the bytes
// left, so a damaged file is reported as corrupt, never read out of bounds.
#include "coco/table_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "coco/json_cursor.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/hash64.h"

namespace detrain::coco {

namespace {

constexpr char kMagic[8] = {'D', 'T', 'C', 'O', 'C', 'O', 'T', '1'};

class ByteWriter {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <class T>
  void put_column(const std::vector<T>& column) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(column.size());
    out_.append(reinterpret_cast<const char*>(column.data()), column.size() * sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.append(s);
  }
  void put_strings(const std::vector<std::string>& strings) {
    std::vector<uint32_t> lengths;
    lengths.reserve(strings.size());
    for (const auto& s : strings) lengths.push_back(static_cast<uint32_t>(s.size()));
    put_column(lengths);
    for (const auto& s : strings) out_.append(s);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

struct Corrupt : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ByteReader {
 public:
  ByteReader(const char* data, size_t size) : p_(data), end_(data + size) {}
  template <class T>
  T get() {
    T value;
    take(&value, sizeof(T));
    return value;
  }
  template <class T>
  void get_column(std::vector<T>* column) {
    const uint64_t n = get<uint64_t>();
    if (n > static_cast<uint64_t>(end_ - p_) / sizeof(T))
      throw Corrupt("a column runs past the end");
    column->resize(n);
    take(column->data(), n * sizeof(T));
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    if (n > static_cast<uint64_t>(end_ - p_)) throw Corrupt("a string runs past the end");
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  void get_strings(std::vector<std::string>* strings) {
    std::vector<uint32_t> lengths;
    get_column(&lengths);
    strings->clear();
    strings->reserve(lengths.size());
    for (const uint32_t n : lengths) {
      if (n > static_cast<uint64_t>(end_ - p_)) throw Corrupt("a string runs past the end");
      strings->emplace_back(p_, n);
      p_ += n;
    }
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  const char* here() const { return p_; }

 private:
  void take(void* out, size_t n) {
    if (n > left()) throw Corrupt("truncated");
    std::memcpy(out, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
};

void put_key(ByteWriter& w, const TableCacheKey& key) {
  w.put(key.file_size);
  w.put(key.file_mtime_ns);
  w.put(key.file_hash);
  w.put_string(key.read_options);
}

std::string encode_payload(const AnnotationTable& t) {
  ByteWriter w;
  w.put_column(t.image_ids);
  w.put_strings(t.image_files);
  w.put_column(t.image_widths);
  w.put_column(t.image_heights);
  std::vector<int64_t> category_ids;
  std::vector<std::string> category_names;
  for (const auto& c : t.categories) {
    category_ids.push_back(c.id);
    category_names.push_back(c.name);
  }
  w.put_column(category_ids);
  w.put_strings(category_names);
  w.put<int32_t>(t.keypoints_per_instance);
  w.put_column(t.ann_id);
  w.put_column(t.ann_image_id);
  w.put_column(t.ann_category_id);
  w.put_column(t.ann_bbox);
  w.put_column(t.ann_area);
  w.put_column(t.ann_iscrowd);
  w.put_column(t.ann_num_keypoints);
  w.put_column(t.ann_keypoints);
  w.put_column(t.ann_fields);
  return std::move(w.bytes());
}

void decode_payload(ByteReader& r, AnnotationTable* t) {
  r.get_column(&t->image_ids);
  r.get_strings(&t->image_files);
  r.get_column(&t->image_widths);
  r.get_column(&t->image_heights);
  std::vector<int64_t> category_ids;
  std::vector<std::string> category_names;
  r.get_column(&category_ids);
  r.get_strings(&category_names);
  if (category_ids.size() != category_names.size()) throw Corrupt("category columns differ");
  t->categories.clear();
  for (size_t i = 0; i < category_ids.size(); ++i)
    t->categories.push_back({category_ids[i], std::move(category_names[i])});
  t->keypoints_per_instance = r.get<int32_t>();
  r.get_column(&t->ann_id);
  r.get_column(&t->ann_image_id);
  r.get_column(&t->ann_category_id);
  r.get_column(&t->ann_bbox);
  r.get_column(&t->ann_area);
  r.get_column(&t->ann_iscrowd);
  r.get_column(&t->ann_num_keypoints);
  r.get_column(&t->ann_keypoints);
  r.get_column(&t->ann_fields);
  const size_t n_images = t->image_ids.size(), n_ann = t->ann_id.size();
  const bool images_ok = t->image_files.size() == n_images && t->image_widths.size() == n_images &&
                         t->image_heights.size() == n_images;
  const bool ann_ok = t->ann_image_id.size() == n_ann && t->ann_category_id.size() == n_ann &&
                      t->ann_bbox.size() == n_ann && t->ann_area.size() == n_ann &&
                      t->ann_iscrowd.size() == n_ann && t->ann_num_keypoints.size() == n_ann &&
                      t->ann_fields.size() == n_ann &&
                      t->ann_keypoints.size() ==
                          n_ann * 3 * static_cast<size_t>(std::max(0, t->keypoints_per_instance));
  if (!images_ok || !ann_ok || r.left() != 0) throw Corrupt("columns of different lengths");
}

// The key of the file at `path`: its size and modification time, and a hash of its first and
// last MiB and of 64 KiB at 62 evenly spaced places between (about 6 MB of any file, so the key
// costs milliseconds where hashing all of COCO-train's 350 MB took a tenth of a second; an edit
// anywhere also changes the modification time).
TableCacheKey key_of(const std::string& path, const ReadOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open '" + path + "': " + describe_errno(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw IoError("cannot stat '" + path + "': " + describe_errno(err));
  }
  TableCacheKey key;
  key.file_size = static_cast<uint64_t>(st.st_size);
  key.file_mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  key.read_options = describe(options);
  constexpr uint64_t kEnd = 1 << 20, kSample = 64 << 10, kSamples = 62;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;  // offset, length
  if (key.file_size <= 2 * kEnd + kSamples * kSample) {
    pieces.push_back({0, key.file_size});
  } else {
    pieces.push_back({0, kEnd});
    const uint64_t stride = (key.file_size - 2 * kEnd) / (kSamples + 1);
    for (uint64_t i = 1; i <= kSamples; ++i) pieces.push_back({kEnd + i * stride, kSample});
    pieces.push_back({key.file_size - kEnd, kEnd});
  }
  Hash64 hash;
  std::vector<char> buffer(kEnd);
  for (const auto& [offset, length] : pieces) {
    for (uint64_t done = 0; done < length;) {
      const uint64_t want = std::min<uint64_t>(length - done, buffer.size());
      const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        const int err = got < 0 ? errno : EIO;
        ::close(fd);
        throw IoError("cannot read '" + path + "': " + describe_errno(err));
      }
      hash.update(buffer.data(), static_cast<size_t>(got));
      done += static_cast<uint64_t>(got);
    }
  }
  ::close(fd);
  key.file_hash = hash.digest();
  return key;
}

}  // namespace

std::string describe(const ReadOptions& o) {
  return std::string("kind=") + o.kind + ";categories=" + (o.require_categories ? "1" : "0") +
         ";image_files=" + (o.image_files ? "1" : "0") + ";bbox=" + (o.require_bbox ? "1" : "0") +
         ";keypoints=" + std::to_string(o.keypoints);
}

std::string encode_table_cache(const TableCacheKey& key, const AnnotationTable& table) {
  const std::string payload = encode_payload(table);
  ByteWriter w;
  w.bytes().append(kMagic, sizeof(kMagic));
  put_key(w, key);
  w.put<uint64_t>(payload.size());
  w.put<uint64_t>(hash64(payload.data(), payload.size()));
  w.bytes().append(payload);
  return std::move(w.bytes());
}

bool decode_table_cache(const char* bytes, size_t size, const TableCacheKey& key,
                        AnnotationTable* table, std::string* why) {
  try {
    if (size < sizeof(kMagic) || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0)
      throw Corrupt("not a detrain annotation cache (or an older format)");
    ByteReader r(bytes + sizeof(kMagic), size - sizeof(kMagic));
    TableCacheKey found;
    found.file_size = r.get<uint64_t>();
    found.file_mtime_ns = r.get<int64_t>();
    found.file_hash = r.get<uint64_t>();
    found.read_options = r.get_string();
    if (found.file_size != key.file_size || found.file_mtime_ns != key.file_mtime_ns ||
        found.file_hash != key.file_hash || found.read_options != key.read_options) {
      *why = "stale";
      return false;
    }
    const uint64_t size = r.get<uint64_t>();
    const uint64_t hash = r.get<uint64_t>();
    if (size != r.left()) throw Corrupt("truncated");
    if (hash64(r.here(), size) != hash) throw Corrupt("its bytes do not match their hash");
    AnnotationTable t;
    decode_payload(r, &t);
    *table = std::move(t);
    return true;
  } catch (const Corrupt& e) {
    *why = std::string("corrupt: ") + e.what();
    return false;
  }
}

AnnotationTable load_annotations_cached(const std::string& path, const ReadOptions& options,
                                        const std::string& cache_file, TableCacheUse* use) {
  TableCacheUse local;
  TableCacheUse& u = use ? *use : local;
  u = {};
  const TableCacheKey key = key_of(path, options);
  struct stat st {};
  if (::stat(cache_file.c_str(), &st) != 0) {
    u.miss = "absent";
  } else {
    try {
      const JsonFile cached(cache_file);  // mapped, not copied
      const JsonInput bytes = cached;
      AnnotationTable table;
      if (decode_table_cache(bytes.data(), bytes.size(), key, &table, &u.miss)) {
        table.source = path;
        u.hit = true;
        return table;
      }
    } catch (const IoError& e) {
      u.miss = std::string("unreadable: ") + e.what();
    }
  }
  AnnotationTable table = load_annotations(path, options);
  try {
    write_file_atomic(cache_file, encode_table_cache(key, table));
    u.written = true;
  } catch (const IoError& e) {
    u.write_error = e.what();
  }
  return table;
}

}  // namespace detrain::coco
