#pragma once

#include <string_view>

namespace troupe::gateway {

/// The admin page (`GET /admin`): one self-contained HTML document (inline style and script, no
/// external assets) that renders `/admin/cluster`, `/admin/workers`, `/admin/requests` and
/// `/admin/actors` and refreshes itself. The admin key, when one is needed, is typed into the
/// page or passed as `#key=...` (a fragment never reaches the server or its logs).
std::string_view admin_page_html() noexcept;

} // namespace troupe::gateway
