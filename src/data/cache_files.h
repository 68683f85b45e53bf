// Where detrain keeps what it derives from a data file (the parsed records of an annotation
// file, the decoded images of a split) so later runs reuse it: in DETRAIN_CACHE_DIR when that
// is set; else beside the data file when its folder is writable, as the reference keeps its
// labels.cache; else in the user's cache folder ($XDG_CACHE_HOME/detrain or ~/.cache/detrain).
// Outside the data folder the name carries a hash of the data file's absolute path, so two data
// sets never share a cache file.
#pragma once

#include <string>

namespace detrain::data {

// The cache file of `data_file` for `kind` (a file-name suffix such as "records"): e.g.
// "<data_file>.detrain-records" beside it.
std::string cache_file_for(const std::string& data_file, const std::string& kind);

}  // namespace detrain::data
