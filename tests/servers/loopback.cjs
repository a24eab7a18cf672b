// Preloaded with `node --require loopback.cjs ...`: every TCP server the
// process starts listens on 127.0.0.1 only. server-everything's HTTP
// transports call `app.listen(PORT)`, which binds all interfaces; the tests
// must neither expose a port nor depend on the machine's other interfaces.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args.length > 0 && typeof args[0] === "object" && args[0] !== null) {
    args[0] = Object.assign({}, args[0], { host: "127.0.0.1" });
  } else if (typeof args[0] === "number" || typeof args[0] === "string") {
    if (typeof args[1] === "string") {
      args[1] = "127.0.0.1";
    } else {
      args.splice(1, 0, "127.0.0.1");
    }
  }
  return listen.apply(this, args);
};
