from django.db import migrations, models

FIELD = dict(
    blank=True,
    choices=[("core", "core"), ("roomd", "roomd"), ("full", "full")],
    help_text="The tools its connections see when their URL names no ?tools=; empty: all.",
    max_length=8,
    null=True,
)


class Migration(migrations.Migration):
    """A key's or invite's default tool profile (rooms.profiles); null, as every existing
    credential gets: every tool, what they always saw."""

    dependencies = [
        ("tenants", "0008_team_people_act_for_agents"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey", name="tools_profile", field=models.CharField(**FIELD)
        ),
        migrations.AddField(
            model_name="invite", name="tools_profile", field=models.CharField(**FIELD)
        ),
    ]
