"""Building blocks for Grafana dashboard JSON (schema of Grafana 10-12): panels, rows,
template variables and a layout that flows panels left to right into 24-column rows.

Used by build_dashboards.py; plain Python 3 standard library, no Grafana SDK.
"""

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24


def steps(*pairs):
    """Threshold steps: steps("green", None, "red", 0.9) -> base green, red from 0.9 up."""
    colors = pairs[0::2]
    values = pairs[1::2]
    return {
        "mode": "absolute",
        "steps": [{"color": c, "value": v} for c, v in zip(colors, values)],
    }


def target(expr, legend, ref_id, fmt="time_series"):
    t = {
        "datasource": DATASOURCE,
        "editorMode": "code",
        "expr": expr,
        "legendFormat": legend,
        "range": True,
        "refId": ref_id,
    }
    if fmt != "time_series":
        t["format"] = fmt
    return t


def _targets(queries, fmt="time_series"):
    """queries: [(expr, legend), ...] -> targets with refIds A, B, ..."""
    return [
        target(expr, legend, chr(ord("A") + i), fmt)
        for i, (expr, legend) in enumerate(queries)
    ]


def _base(kind, title, description, queries, width, height, fmt="time_series"):
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"w": width, "h": height},
        "targets": _targets(queries, fmt),
    }


def timeseries(title, description, queries, unit, *, thresholds=None, stack=False,
               max_value=None, width=12, height=8):
    """A time series panel; thresholds, when given, are drawn as dashed lines."""
    panel = _base("timeseries", title, description, queries, width, height)
    custom = {
        "drawStyle": "line",
        "lineWidth": 1,
        "fillOpacity": 20 if stack else 5,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        "thresholdsStyle": {"mode": "dashed" if thresholds else "off"},
    }
    defaults = {
        "unit": unit,
        "min": 0,
        "custom": custom,
        "thresholds": thresholds or steps("green", None),
        "color": {"mode": "palette-classic"},
    }
    if max_value is not None:
        defaults["max"] = max_value
    panel["fieldConfig"] = {"defaults": defaults, "overrides": []}
    panel["options"] = {
        "legend": {
            "displayMode": "table",
            "placement": "bottom",
            "calcs": ["mean", "max", "lastNotNull"],
            "showLegend": True,
        },
        "tooltip": {"mode": "multi", "sort": "desc"},
    }
    return panel


def stat(title, description, expr, unit, thresholds, *, decimals=None, width=4, height=4):
    """A single-number tile coloured by its thresholds, with a sparkline."""
    panel = _base("stat", title, description, [(expr, title)], width, height)
    defaults = {"unit": unit, "thresholds": thresholds, "color": {"mode": "thresholds"}}
    if decimals is not None:
        defaults["decimals"] = decimals
    panel["fieldConfig"] = {"defaults": defaults, "overrides": []}
    panel["options"] = {
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "colorMode": "background",
        "graphMode": "area",
        "justifyMode": "center",
        "textMode": "value",
        "orientation": "auto",
    }
    return panel


def heatmap(title, description, expr, unit, *, width=12, height=8):
    """A heatmap of a Prometheus histogram: one query returning per-bucket increases."""
    panel = _base("heatmap", title, description, [(expr, "{{le}}")], width, height,
                  fmt="heatmap")
    panel["fieldConfig"] = {"defaults": {"unit": unit}, "overrides": []}
    panel["options"] = {
        "calculate": False,
        "cellGap": 1,
        "color": {"mode": "scheme", "scheme": "Oranges", "scale": "exponential",
                  "exponent": 0.5, "fill": "dark-orange", "reverse": False, "steps": 64},
        "yAxis": {"axisPlacement": "left", "unit": unit},
        "rowsFrame": {"layout": "le"},
        "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": True},
        "legend": {"show": True},
        "exemplars": {"color": "rgba(255,0,255,0.7)"},
    }
    return panel


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": [],
            "gridPos": {"w": GRID_WIDTH, "h": 1}}


def layout(items):
    """Assigns ids and x/y positions: rows span the width, panels flow left to right."""
    x = y = line_height = 0
    for panel_id, item in enumerate(items, start=1):
        item["id"] = panel_id
        grid = item["gridPos"]
        if item["type"] == "row" or x + grid["w"] > GRID_WIDTH:
            y += line_height
            x = line_height = 0
        grid["x"], grid["y"] = x, y
        if item["type"] == "row":
            y += grid["h"]
            continue
        x += grid["w"]
        line_height = max(line_height, grid["h"])
    return items


def datasource_variable():
    return {
        "type": "datasource",
        "name": "datasource",
        "label": "Data source",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
        "regex": "",
    }


def custom_variable(name, label, values, default, description):
    options = [{"text": v, "value": v, "selected": v == default} for v in values]
    return {
        "type": "custom",
        "name": name,
        "label": label,
        "description": description,
        "query": ",".join(values),
        "current": {"text": default, "value": default, "selected": True},
        "options": options,
        "hide": 0,
        "multi": False,
        "includeAll": False,
    }


def query_variable(name, label, definition, description):
    """A multi-select variable filled by a label_values() query, with "All" meaning .*."""
    return {
        "type": "query",
        "name": name,
        "label": label,
        "description": description,
        "datasource": DATASOURCE,
        "definition": definition,
        "query": {"query": definition, "refId": f"{name}-variable"},
        "refresh": 2,
        "regex": "",
        "sort": 1,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all", "selected": True},
        "options": [],
        "hide": 0,
    }


def dashboard(uid, title, description, tags, variables, panels):
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": tags,
        "editable": True,
        "graphTooltip": 1,
        "refresh": "10s",
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "version": 1,
        "links": [],
        "annotations": {"list": [{
            "builtIn": 1,
            "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True,
            "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts",
            "type": "dashboard",
        }]},
        "templating": {"list": variables},
        "panels": layout(panels),
    }
