// The timeline picture's hover, run under Node against a page `rulec simulate --html` wrote
// (TimelinePictureTests): its inline script is run with a small stub of the DOM, the pointer is
// moved over a lane at a time, and the line it shows is printed. Prints one line per request.
//   node Tests/Browser/hover.js PAGE.html LANE SECONDS [LANE SECONDS ...]
"use strict";
const fs = require("fs");

const [page, ...requests] = process.argv.slice(2);
const html = fs.readFileSync(page, "utf8");
const data = /<script type="application\/json" id="data">([\s\S]*?)<\/script>/.exec(html)[1];
const code = /<script>\n([\s\S]*?)<\/script>/.exec(html)[1];
const d = JSON.parse(data);

// The stub: the drawing's coordinates are the screen's (no transform), the tip records its text.
let move = null;
const tip = { textContent: "" };
const svg = {
  addEventListener(kind, handler) { if (kind === "mousemove") move = handler; },
  createSVGPoint() { return { x: 0, y: 0, matrixTransform() { return { x: this.x, y: this.y }; } }; },
  getScreenCTM() { return { inverse() { return null; } }; },
};
const body = { attributes: {}, setAttribute(name, value) { this.attributes[name] = value; } };
const document = {
  body,
  getElementById(id) { return id === "data" ? { textContent: data } : id === "timeline" ? svg : id === "tip" ? tip : null; },
};
new Function("document", code)(document);
if (body.attributes["data-ready"] !== "yes" || !move) { console.error("the page's script did not start"); process.exit(1); }

for (let k = 0; k + 1 < requests.length; k += 2) {
  const lane = d.lanes.find((l) => l.name === requests[k]);
  if (!lane) { console.error("no lane " + requests[k]); process.exit(1); }
  const seconds = Number(requests[k + 1]);
  const x = d.left + (seconds - d.t0) / (d.t1 - d.t0) * d.width;
  tip.textContent = "";
  move({ clientX: x, clientY: lane.y + d.laneHeight / 2 });
  console.log(tip.textContent);
}
