// Package prom holds the codecs of the Prometheus dialect: pure functions
// from bytes to values and back, with no HTTP and no storage in them, so
// they can be fuzzed on their own (the handlers in api/ are thin adapters).
//
//   - Remote write. Decoder reads a remote-write body, Remote-Write 1.0
//     (prometheus.WriteRequest) or 2.0 (io.prometheus.write.v2.Request with its
//     symbol table), straight from the protobuf wire format: it never builds
//     the generated structs, so a body of n bytes costs O(n) small integers
//     at most (the 2.0 symbol offsets) whatever it holds. A first pass checks
//     that the whole body is well formed (a malformed body stores nothing);
//     a second pass hands each series, validated, to the caller, whose
//     samples are read from the body on demand.
//   - Remote read. DecodeReadRequest reads a prometheus.ReadRequest;
//     NegotiateResponseType picks the response type as Prometheus does;
//     SamplesResponse builds a SAMPLES ReadResponse and ChunkedWriter streams
//     STREAMED_XOR_CHUNKS frames (uvarint length, CRC32-Castagnoli, a
//     ChunkedReadResponse holding XOR chunks from tsdb/chunkenc).
//   - The query API. AppendSuccessStart/End, AppendError and the value
//     appenders write the JSON of Prometheus' HTTP API as Prometheus does:
//     the same fields in the same order, timestamps as seconds with up to
//     three decimals, values as strings ("NaN", "+Inf") formatted as
//     util/jsonutil formats them. Strings are escaped as encoding/json
//     escapes them, which parses to the same values as Prometheus' output.
//
// Nothing here is safe for concurrent use unless it says so; a Decoder is
// reused for many requests, one at a time.
package prom
