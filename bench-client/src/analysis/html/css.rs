//! The page's only stylesheet, inlined in `<style>`: system fonts, readable tables, charts that
//! shrink with the window. No `url()` and no `@import`: nothing is fetched.

pub const CSS: &str = r#"
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif;
  margin: 0 auto; max-width: 1700px; padding: 16px 24px; color: #222; background: #fafafa; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 21px; margin: 28px 0 8px; border-bottom: 2px solid #0072B2; padding-bottom: 4px; }
h3 { font-size: 17px; margin: 18px 0 6px; }
p.meta, p.note { color: #555; margin: 4px 0 10px; }
p.note { font-style: italic; }
nav { margin: 8px 0 16px; font-size: 14px; }
nav a { margin-right: 14px; color: #0072B2; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 13px; background: #fff;
  display: block; max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #eef3f8; }
td.text, th.text { text-align: left; white-space: normal; }
tr.regression td { background: #fde3d8; }
td.better { color: #00704a; }
td.worse { color: #b03a00; font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure.chart { margin: 0; background: #fff; border: 1px solid #ddd; padding: 4px;
  flex: 0 1 660px; min-width: 0; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figure.chart figcaption { font-size: 12px; color: #555; padding: 2px 6px 4px; }
.knee { font-weight: bold; }
"#;
