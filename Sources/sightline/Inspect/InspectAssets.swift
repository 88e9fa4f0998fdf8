/// The inspector's stylesheet and script, served from memory: no CDN, no
/// file outside the binary. The script draws the zoomable timeline and the
/// fleet table from the inspector's JSON, and nothing else; every other page
/// is HTML the server writes.
enum InspectAssets {
    static let css = """
        * { box-sizing: border-box; }
        body { font: 14px/1.45 system-ui, -apple-system, sans-serif; margin: 0; color: #1d1d1f; background: #fff; }
        header { display: flex; flex-wrap: wrap; gap: .6rem 1.4rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid #ddd; background: #f7f7f9; }
        header .brand { font-weight: 700; } nav a { margin-right: 1rem; color: #0a58ca; text-decoration: none; } nav a.here { font-weight: 700; color: #1d1d1f; }
        form.search { display: flex; gap: .4rem; flex: 1 1 18rem; max-width: 36rem; margin-left: auto; }
        form.search input { flex: 1; min-width: 0; padding: .35rem .5rem; font: inherit; border: 1px solid #bbb; border-radius: 4px; }
        button { font: inherit; padding: .3rem .7rem; border: 1px solid #999; border-radius: 4px; background: #fff; cursor: pointer; }
        main { max-width: 1280px; margin: 0 auto; padding: 1rem 1.2rem 3rem; }
        h1 { font-size: 1.4rem; margin: .4rem 0 1rem; } h2 { font-size: 1.1rem; margin-top: 1.8rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
        table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #eee; vertical-align: top; overflow-wrap: anywhere; }
        th { color: #555; font-weight: 600; } th.sortable { cursor: pointer; white-space: nowrap; } th.sortable:hover { color: #0a58ca; }
        td.num, th.num { text-align: right; } code, .mono { font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: anywhere; }
        .pass { color: #1a7f37; font-weight: 600; } .fail { color: #c62828; font-weight: 600; }
        .verdict { border-left: 4px solid; padding: .3rem 1rem; margin: 1rem 0; } .verdict.ok { border-color: #1a7f37; background: #f1f8f3; }
        .verdict.bad { border-color: #c62828; background: #fdf3f3; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 1rem 2rem; }
        .controls { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .5rem 0; } .controls .note { color: #555; font-size: 12px; }
        #timeline svg { display: block; width: 100%; user-select: none; cursor: grab; } svg text { font: 12px system-ui, sans-serif; fill: #444; }
        .muted { color: #666; } .steps td:first-child { white-space: nowrap; } a { color: #0a58ca; }
        @media (max-width: 900px) { main { padding: .8rem; } td, th { padding: .2rem .35rem; } }
        """

    static let js = #"""
        "use strict";
        // Round steps for an axis: 1, 2 or 5 times a power of ten, about `count` of them.
        function niceStep(span, count) {
          const rough = Math.max(span, 1e-9) / count;
          const power = Math.pow(10, Math.floor(Math.log10(rough)));
          for (const m of [1, 2, 5, 10]) { if (m * power >= rough) return m * power; }
          return 10 * power;
        }
        function label(value) {
          if (Math.abs(value) >= 1e6) return (value / 1e6).toFixed(1).replace(/\.0$/, "") + "M";
          if (Math.abs(value) >= 1e4) return (value / 1e3).toFixed(1).replace(/\.0$/, "") + "k";
          return Number.isInteger(value) ? String(value) : value.toFixed(1);
        }
        function svgElement(name, attributes, text) {
          const element = document.createElementNS("http://www.w3.org/2000/svg", name);
          for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
          if (text !== undefined) element.textContent = text;
          return element;
        }

        // The run's timeline: a row per kind of event, ticks at their virtual
        // seconds, cloud outages shaded; zoom with the buttons or the wheel,
        // drag to move along.
        function timeline(root) {
          const data = JSON.parse(root.querySelector("script[type='application/json']").textContent);
          const chart = root.querySelector(".chart");
          const shown = root.querySelector(".window");
          let view = [0, Math.max(data.duration, 1)];
          const labelWidth = 180, rowHeight = 20, top = 6;
          function draw() {
            const width = Math.max(chart.clientWidth, 300);
            const height = top + rowHeight * Math.max(data.rows.length, 1) + 40;
            const span = view[1] - view[0];
            const x = (t) => labelWidth + (t - view[0]) / span * (width - labelWidth - 12);
            const svg = svgElement("svg", { viewBox: `0 0 ${width} ${height}`, height: height, role: "img" });
            const bottom = top + rowHeight * Math.max(data.rows.length, 1);
            for (const [start, end] of data.outages) {
              if (end < view[0] || start > view[1]) continue;
              const a = Math.max(x(start), labelWidth), b = Math.min(x(end), width - 12);
              svg.appendChild(svgElement("rect", { x: a, y: top, width: Math.max(b - a, 1), height: bottom - top, fill: "#fde2e2" }));
            }
            data.rows.forEach((row, index) => {
              const y = top + index * rowHeight;
              if (index % 2) svg.appendChild(svgElement("rect", { x: labelWidth, y: y, width: width - labelWidth - 12, height: rowHeight, fill: "#f6f7f9" }));
              svg.appendChild(svgElement("text", { x: labelWidth - 8, y: y + 14, "text-anchor": "end" }, `${row.kind} (${row.count})`));
              let path = "", last = -1;
              for (const t of row.times) {
                if (t < view[0] || t > view[1]) continue;
                const column = Math.round(x(t));
                if (column === last) continue;
                last = column;
                path += `M${column} ${y + 3}v${rowHeight - 6}`;
              }
              svg.appendChild(svgElement("path", { d: path, stroke: row.color, "stroke-width": 1.5 }));
            });
            svg.appendChild(svgElement("line", { x1: labelWidth, y1: bottom, x2: width - 12, y2: bottom, stroke: "#999" }));
            const step = niceStep(span, Math.max(2, Math.floor((width - labelWidth) / 110)));
            for (let t = Math.ceil(view[0] / step) * step; t <= view[1] + 1e-9; t += step) {
              const px = x(t);
              const anchor = px > width - 40 ? "end" : "middle";
              svg.appendChild(svgElement("line", { x1: px, y1: bottom, x2: px, y2: bottom + 4, stroke: "#999" }));
              svg.appendChild(svgElement("text", { x: px, y: bottom + 16, "text-anchor": anchor }, label(t)));
            }
            svg.appendChild(svgElement("text", { x: (labelWidth + width - 12) / 2, y: bottom + 32, "text-anchor": "middle" }, "virtual seconds"));
            chart.replaceChildren(svg);
            shown.textContent = `showing ${label(view[0])}–${label(view[1])} of ${label(data.duration)} virtual s`;
            let dragging = null;
            svg.addEventListener("mousedown", (event) => { dragging = { at: event.clientX, view: view.slice() }; });
            window.onmouseup = () => { dragging = null; };
            svg.addEventListener("mousemove", (event) => {
              if (!dragging) return;
              const shift = (event.clientX - dragging.at) / (width - labelWidth - 12) * (dragging.view[1] - dragging.view[0]);
              move(dragging.view[0] - shift, dragging.view[1] - shift);
            });
            svg.addEventListener("wheel", (event) => {
              event.preventDefault();
              const at = view[0] + (event.offsetX - labelWidth) / (width - labelWidth - 12) * span;
              zoom(event.deltaY < 0 ? 0.5 : 2, at);
            }, { passive: false });
          }
          function move(start, end) {
            const span = end - start;
            if (start < 0) { start = 0; end = span; }
            if (end > data.duration) { end = data.duration; start = Math.max(0, end - span); }
            view = [start, end];
            draw();
          }
          function zoom(factor, at) {
            const span = Math.min(Math.max((view[1] - view[0]) * factor, 1), Math.max(data.duration, 1));
            const center = at === undefined ? (view[0] + view[1]) / 2 : at;
            move(center - span / 2, center + span / 2);
          }
          root.querySelector(".zoom-in").addEventListener("click", () => zoom(0.5));
          root.querySelector(".zoom-out").addEventListener("click", () => zoom(2));
          root.querySelector(".zoom-reset").addEventListener("click", () => move(0, Math.max(data.duration, 1)));
          window.addEventListener("resize", draw);
          draw();
        }

        // The fleet: every device, sortable by any column, filtered by a
        // text (a number or part of an id) or a condition such as
        // "restores>0", a page of 100 rows at a time.
        function fleet(root) {
          const devices = JSON.parse(root.querySelector("script[type='application/json']").textContent);
          const columns = ["number", "id", "calls", "epoch", "restores", "backups", "largestBacklog"];
          const body = root.querySelector("tbody"), filter = root.querySelector(".filter"), shown = root.querySelector(".shown");
          let sort = { column: "number", down: false }, page = 0;
          const pageSize = 100;
          function matches(device, text) {
            text = text.trim();
            if (!text) return true;
            const condition = text.match(/^(\w+)\s*(>=|<=|>|<|=)\s*(\d+)$/);
            if (condition && columns.includes(condition[1])) {
              const value = device[condition[1]], limit = Number(condition[3]);
              return { ">": value > limit, "<": value < limit, ">=": value >= limit, "<=": value <= limit, "=": value === limit }[condition[2]];
            }
            return String(device.number) === text || device.id.includes(text);
          }
          function draw() {
            const rows = devices.filter((device) => matches(device, filter.value));
            rows.sort((a, b) => {
              const x = a[sort.column] ?? 0, y = b[sort.column] ?? 0;
              const order = typeof x === "string" ? String(x).localeCompare(String(y)) : x - y;
              return (sort.down ? -order : order) || a.number - b.number;
            });
            page = Math.min(page, Math.max(0, Math.ceil(rows.length / pageSize) - 1));
            const slice = rows.slice(page * pageSize, (page + 1) * pageSize);
            body.replaceChildren(...slice.map((device) => {
              const tr = document.createElement("tr");
              for (const column of columns) {
                const td = document.createElement("td");
                if (column !== "id") td.className = "num";
                if (column === "number") {
                  const link = document.createElement("a");
                  link.href = `/devices/${device.number}`;
                  link.textContent = device.number;
                  td.appendChild(link);
                } else {
                  td.textContent = device[column] ?? "";
                }
                tr.appendChild(td);
              }
              return tr;
            }));
            shown.textContent = rows.length === 0 ? `no device of ${devices.length} matches`
              : `devices ${page * pageSize + 1}–${page * pageSize + slice.length} of ${rows.length}` + (rows.length < devices.length ? ` (of ${devices.length})` : "");
            for (const th of root.querySelectorAll("th.sortable")) {
              th.textContent = th.dataset.label + (th.dataset.column === sort.column ? (sort.down ? " ▼" : " ▲") : "");
            }
          }
          for (const th of root.querySelectorAll("th.sortable")) {
            th.addEventListener("click", () => {
              sort = { column: th.dataset.column, down: sort.column === th.dataset.column ? !sort.down : th.dataset.column !== "number" && th.dataset.column !== "id" };
              draw();
            });
          }
          filter.addEventListener("input", () => { page = 0; draw(); });
          root.querySelector(".previous").addEventListener("click", () => { page = Math.max(0, page - 1); draw(); });
          root.querySelector(".next").addEventListener("click", () => { page += 1; draw(); });
          draw();
        }

        document.querySelectorAll("[data-timeline]").forEach(timeline);
        document.querySelectorAll("[data-fleet]").forEach(fleet);
        """#
}
