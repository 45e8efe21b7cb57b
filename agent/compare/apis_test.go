package compare

// Every API group version of CSI Proxy v1.3.0, so that the tests see every
// method any version declares.

import _ "github.com/pipeguard/pipeguard/internal/testing/csiapis"
