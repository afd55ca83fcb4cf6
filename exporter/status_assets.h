#pragma once
// The status page's files (exporter/web/), built into the binary by
// exporter/web/embed.cmake. Served by HttpServer at /, /static/status.css
// and /static/status.js; they load nothing from anywhere else.

namespace ibfabric::exporter {

extern const char* const kStatusHtml;  // "METRICS_PATH" stands for --web.telemetry-path
extern const char* const kStatusCss;
extern const char* const kStatusJs;

}  // namespace ibfabric::exporter
