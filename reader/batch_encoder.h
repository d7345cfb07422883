// reader/batch_encoder.h: the writer's side of a batch: absolute, decoded events back into the
// wire form (gapwatch.v1.EventBatch) under the delta rules of events.proto.
//
// StreamDecoder turns a batch's running deltas into absolute values; encodeEventBatch() is its
// inverse, so that a stream that did not come from the recorder (a PyTorch profiler trace, through
// `gapwatch import`) and the tests' recordings are written with the same rules the decoder reads:
// per list, running time deltas from base_time_ns and running correlation deltas from 0, and
// thread_id 0 for "the same thread as the previous element". Decoding the result gives back the
// same events (frame_offset aside).
#pragma once

#include "reader/stream_decoder.h"

#include <gapwatch/v1/events.pb.h>

namespace gapwatch {

v1::EventBatch encodeEventBatch(const DecodedBatch& batch);

}  // namespace gapwatch
