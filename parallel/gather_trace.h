// Every rank's trace events on rank 0, so that one trace.json and one timeline show the
// whole job, whichever backend the ranks run on.
#pragma once
#include <vector>

#include "parallel/process_group.h"
#include "report/trace.h"

namespace rg::parallel {

// A collective: rank 0 gets every rank's events merged in time order (report::merge);
// the other ranks get an empty list. Events travel as text lines, "tid start duration
// category int-args name", so of other ranks' args only the integer ones (bytes, bucket,
// seq) come along; rank 0's keep all theirs.
std::vector<report::TraceEvent> gather_trace(ProcessGroup& pg, const std::vector<report::TraceEvent>& mine);

}  // namespace rg::parallel
