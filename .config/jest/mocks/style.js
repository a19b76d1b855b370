// What a stylesheet import (Grafana's UI imports some) gives under jest:
// nothing. create-plugin maps them to identity-obj-proxy; no test here reads
// class names from a stylesheet.
module.exports = {};
