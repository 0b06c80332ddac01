// Preloaded into npm reference servers (node --import): bind every listen() without a host to 127.0.0.1,
// so tests never open a port on other interfaces (server-everything listens on all of them by default).
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || /^\d+$/.test(String(args[0]))) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
