// Field enumeration of an Experiment; see experiment.h.
#include "config/experiment.h"

namespace detrain::config {

namespace {
struct SectionCollector {
  std::vector<FieldRef>& out;
  template <class Section>
  void operator()(const char* name, Section& section) {
    FieldCollector collector(name, out);
    section.visit(collector);
  }
};
}  // namespace

std::vector<FieldRef> fields_of(Experiment& experiment) {
  std::vector<FieldRef> out;
  SectionCollector collector{out};
  experiment.visit_sections(collector);
  return out;
}

}  // namespace detrain::config
