import { BarChart, LineChart } from 'echarts/charts';
import { AriaComponent, GridComponent, LegendComponent, TooltipComponent } from 'echarts/components';
import { init, use as registerEcharts, type ComposeOption } from 'echarts/core';
import type { BarSeriesOption, LineSeriesOption } from 'echarts/charts';
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
import { useEffect, useRef, type ReactNode } from 'react';

// Only what the statistics view draws, so the bundle carries no other chart type.
registerEcharts([
  BarChart,
  LineChart,
  GridComponent,
  TooltipComponent,
  LegendComponent,
  AriaComponent,
  SVGRenderer,
]);

export type ChartOption = ComposeOption<
  | BarSeriesOption
  | LineSeriesOption
  | GridComponentOption
  | TooltipComponentOption
  | LegendComponentOption
  | AriaComponentOption
>;

/** Colours distinguishable with the common colour-vision deficiencies, readable on white. */
export const CHART_COLORS = ['#0b57a4', '#d55e00', '#009e73', '#cc79a7', '#6a5acd', '#8a6d00'];

interface Props {
  title: string;
  /** One sentence saying what the chart shows, for screen readers (the table under it has the numbers). */
  summary: string;
  option: ChartOption;
  /** The same figures as a table, offered under the chart. */
  table: ReactNode;
  height?: number;
}

/** An ECharts chart in a figure, with its data as a table for keyboard and screen-reader users. */
export function Chart({ title, summary, option, table, height = 260 }: Props) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const chart = init(element, null, { renderer: 'svg' });
    chart.setOption({
      color: CHART_COLORS,
      aria: { enabled: true, label: { description: summary } },
      textStyle: { fontFamily: 'system-ui, sans-serif' },
      animation: false,
      ...option,
    });
    const resize = new ResizeObserver(() => chart.resize());
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.dispose();
    };
  }, [option, summary]);
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <div ref={container} role="img" aria-label={summary} style={{ height }} />
      <details>
        <summary>Data of “{title}”</summary>
        {table}
      </details>
    </figure>
  );
}
