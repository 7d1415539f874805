// Chrome trace-event JSON (chrome://tracing, Perfetto), shared by the trace
// of a simulated program (report.cc) and of a serving estimate
// (serve_report.cc): processes, named tracks, and complete ("X") events
// with times in microseconds.
#ifndef TRNMX_EMU_SRC_TRACE_CHROME_TRACE_H_
#define TRNMX_EMU_SRC_TRACE_CHROME_TRACE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace trnmx::emu::internal {

class ChromeTrace {
 public:
  void Process(int pid, const std::string& name) {
    events_.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
  }
  // A track (thread) of a process; `sorted` also pins it at position tid.
  void Track(int pid, int tid, const std::string& name, bool sorted) {
    events_.push_back({{"name", "thread_name"},
                       {"ph", "M"},
                       {"pid", pid},
                       {"tid", tid},
                       {"args", {{"name", name}}}});
    if (sorted) {
      events_.push_back({{"name", "thread_sort_index"},
                         {"ph", "M"},
                         {"pid", pid},
                         {"tid", tid},
                         {"args", {{"sort_index", tid}}}});
    }
  }
  void Complete(int pid, int tid, const std::string& name, const std::string& cat, double ts_us,
                double dur_us, nlohmann::json args) {
    events_.push_back({{"name", name},
                       {"cat", cat},
                       {"ph", "X"},
                       {"pid", pid},
                       {"tid", tid},
                       {"ts", ts_us},
                       {"dur", dur_us},
                       {"args", std::move(args)}});
  }
  std::string Dump(nlohmann::json other_data) const {
    const nlohmann::json doc = {
        {"traceEvents", events_}, {"displayTimeUnit", "ns"}, {"otherData", std::move(other_data)}};
    return doc.dump();
  }

 private:
  nlohmann::json events_ = nlohmann::json::array();
};

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_TRACE_CHROME_TRACE_H_
