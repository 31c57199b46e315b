// trace.pb.h for test files that also include interpose/recorder.h: the generated enum
// idlescope::Severity (trace.proto) and the recorder API's enum class idlescope::Severity share a
// name, so here the generated one is spelled idlescope::ProtoSeverity. Only inline code of the
// generated header mentions the enum's type, so the renaming stays within the including file.
#pragma once

#define Severity ProtoSeverity
#include "trace.pb.h"
#undef Severity
